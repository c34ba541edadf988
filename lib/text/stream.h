/* stream.h: the text of one generation as llm-run streams it.  Token
 * bytes go in; text comes out that never ends inside a UTF-8 character (each invalid
 * sequence becomes one U+FFFD, as Hugging Face decoding gives it) and
 * never holds the start of a stop string that may still complete, so
 * that a stop string split across tokens is never printed.  When one
 * completes, the text before it comes out and the stream stops. */
#ifndef LLM_STREAM_H
#define LLM_STREAM_H

#include <stddef.h>

#include "../base/util.h"

struct llm_stream {
	char **stop; /* stop strings (borrowed) */
	size_t nstop, maxstop;
	struct llm_buf raw;  /* every byte pushed */
	size_t done;         /* raw bytes already turned into text */
	struct llm_buf text; /* all text released so far (valid UTF-8) */
	int stopped;         /* a stop string completed */
};
void llm_stream_init(struct llm_stream *s, char **stop, size_t nstop);
/* Push the bytes of a token; the text released by it is appended to out
 * (and to s->text).  Returns 1 when a stop string completed (nothing
 * after it is released; later pushes are ignored), else 0. */
int llm_stream_push(struct llm_stream *s, const char *p, size_t n, struct llm_buf *out);
/* The generation ended: release what was held back (an incomplete
 * character as U+FFFD, the start of a stop string as text). */
void llm_stream_finish(struct llm_stream *s, struct llm_buf *out);
void llm_stream_free(struct llm_stream *s);

#endif
