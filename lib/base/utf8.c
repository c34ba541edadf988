/* utf8.c: UTF-8 decoding, encoding, validation and lossy repair (see utf8.h). */
#include <stddef.h>
#include <stdint.h>

#include "utf8.h"

/* One step of UTF-8 decoding at s (n > 0 bytes).  Returns the length of a
 * valid sequence (code point in *cp), or minus the length of the maximal
 * invalid subpart (the bytes a lossy decoder replaces by one U+FFFD). */
static int
utf8_step(const uint8_t *p, size_t n, uint32_t *cp)
{
	uint8_t b = p[0], lo = 0x80, hi = 0xbf;
	uint32_t c;
	size_t len;

	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xc2 && b <= 0xdf) {
		len = 2;
		c = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		len = 3;
		c = b & 0x0f;
		if (b == 0xe0)
			lo = 0xa0;
		else if (b == 0xed)
			hi = 0x9f;
	} else if (b >= 0xf0 && b <= 0xf4) {
		len = 4;
		c = b & 0x07;
		if (b == 0xf0)
			lo = 0x90;
		else if (b == 0xf4)
			hi = 0x8f;
	} else {
		return -1;
	}
	for (size_t i = 1; i < len; i++) {
		if (i >= n || p[i] < lo || p[i] > hi)
			return -(int)i;
		lo = 0x80;
		hi = 0xbf;
		c = c << 6 | (p[i] & 0x3f);
	}
	*cp = c;
	return (int)len;
}

size_t
llm_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	if (n == 0)
		return 0;
	int r = utf8_step((const uint8_t *)s, n, cp);
	return r > 0 ? (size_t)r : 0;
}

size_t
llm_utf8_encode(uint32_t cp, char *out)
{
	uint8_t *o = (uint8_t *)out;
	if (cp < 0x80) {
		o[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (uint8_t)(0xc0 | cp >> 6);
		o[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (uint8_t)(0xe0 | cp >> 12);
		o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (uint8_t)(0xf0 | cp >> 18);
	o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

int
llm_utf8_valid(const char *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0;
	uint32_t cp;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		int r = utf8_step(p + i, n - i, &cp);
		if (r < 0)
			return 0;
		i += (size_t)r;
	}
	return 1;
}

void
llm_utf8_lossy(const char *s, size_t n, struct llm_buf *out)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0, run = 0;
	uint32_t cp;

	if (!n)
		return;
	while (i < n) {
		int r = p[i] < 0x80 ? 1 : utf8_step(p + i, n - i, &cp);
		if (r > 0) {
			i += (size_t)r;
			continue;
		}
		llm_buf_add(out, s + run, i - run);
		llm_buf_add(out, "\xef\xbf\xbd", 3);
		i += (size_t)-r;
		run = i;
	}
	llm_buf_add(out, s + run, n - run);
}
