/* stream.c: the text stream of a generation (see stream.h). */
#include <stdlib.h>
#include <string.h>

#include "stream.h"
#include "tokenizer.h"

void
llm_stream_init(struct llm_stream *s, char **stop, size_t nstop)
{
	memset(s, 0, sizeof(*s));
	s->stop = stop;
	s->nstop = nstop;
	for (size_t i = 0; i < nstop; i++)
		if (strlen(stop[i]) > s->maxstop)
			s->maxstop = strlen(stop[i]);
}

void
llm_stream_free(struct llm_stream *s)
{
	llm_buf_free(&s->raw);
	llm_buf_free(&s->text);
}

/* Bytes at the end of p[0, n) that begin a UTF-8 character still missing
 * bytes (a lead byte and valid continuation bytes so far), else 0. */
static size_t
incomplete_tail(const unsigned char *p, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char b = p[n - k];
		if ((b & 0xc0) == 0x80)
			continue;
		size_t need = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
		if (need <= k)
			return 0;
		if (k >= 2) {
			/* The second byte's range depends on the lead. */
			unsigned char c = p[n - k + 1];
			unsigned char lo = b == 0xe0 ? 0xa0 : b == 0xf0 ? 0x90 : 0x80;
			unsigned char hi = b == 0xed ? 0x9f : b == 0xf4 ? 0x8f : 0xbf;
			if (c < lo || c > hi)
				return 0;
		}
		return k;
	}
	return 0;
}

static void
release(struct llm_stream *s, size_t upto, struct llm_buf *out)
{
	size_t before = s->text.len;

	if (upto <= s->done)
		return;
	llm_utf8_lossy(s->raw.p + s->done, upto - s->done, &s->text);
	llm_buf_add(out, s->text.p + before, s->text.len - before);
	s->done = upto;
}

int
llm_stream_push(struct llm_stream *s, const char *p, size_t n, struct llm_buf *out)
{
	size_t end, hold;

	if (s->stopped)
		return 1;
	if (n)
		llm_buf_add(&s->raw, p, n);
	end = s->raw.len;
	/* A stop string can only start at or after done: everything before
	 * was released because no stop string could start there. */
	size_t first = SIZE_MAX;
	for (size_t i = 0; i < s->nstop; i++) {
		size_t k = strlen(s->stop[i]);
		if (k == 0)
			continue;
		for (size_t j = s->done; j + k <= end && j < first; j++)
			if (memcmp(s->raw.p + j, s->stop[i], k) == 0) {
				first = j;
				break;
			}
	}
	if (first != SIZE_MAX) {
		release(s, first, out);
		s->stopped = 1;
		return 1;
	}
	/* Hold back the longest tail that is a proper prefix of a stop string
	 * and an incomplete character. */
	hold = end;
	for (size_t j = end > s->maxstop ? end - s->maxstop + 1 : 0; j < end && hold == end; j++) {
		if (j < s->done)
			continue;
		for (size_t i = 0; i < s->nstop; i++)
			if (strlen(s->stop[i]) > end - j && memcmp(s->raw.p + j, s->stop[i], end - j) == 0) {
				hold = j;
				break;
			}
	}
	size_t u = end - incomplete_tail((const unsigned char *)s->raw.p, end);
	if (u < hold)
		hold = u;
	release(s, hold, out);
	return 0;
}

void
llm_stream_finish(struct llm_stream *s, struct llm_buf *out)
{
	if (!s->stopped)
		release(s, s->raw.len, out);
}
