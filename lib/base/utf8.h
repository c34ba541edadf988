/* utf8.h: UTF-8 as Unicode and Rust define it, for the tokenizer, the
 * templates and every way text comes in.  llm_utf8_decode reads one code
 * point at s (n bytes available) into *cp and returns its length, or 0
 * for an invalid or truncated sequence.  llm_utf8_lossy appends s to out
 * with each maximal invalid subpart replaced by U+FFFD (Rust's
 * from_utf8_lossy). */
#ifndef LLM_UTF8_H
#define LLM_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

size_t llm_utf8_decode(const char *s, size_t n, uint32_t *cp);
size_t llm_utf8_encode(uint32_t cp, char *out);
int llm_utf8_valid(const char *s, size_t n);
void llm_utf8_lossy(const char *s, size_t n, struct llm_buf *out);

#endif
