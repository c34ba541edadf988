/* fuzz_bundle.c: libFuzzer target for the bundle reader (lib/formats/bundle.c,
 * llm_bundle_open on a model.llm: ustar and pax headers, checksums, base-256
 * sizes, member names).  A bundle that opens keeps bundle.h's promises:
 * members with relative names (no empty, "." or ".." component), no
 * duplicates, each inside the file, found by name, and read back whole at their size (members up to
 * 64 KiB are read, so ASan would catch a read outside); a refused one
 * leaves one line naming the bundle.  Build and run: see
 * tests/fuzz/README. */
#include "../../lib/formats/bundle.h"
#include "../../lib/base/util.h"
#include "fuzzfile.h"

/* A relative name whose components are neither empty, "." nor "..". */
static int
safe_name(const char *n)
{
	if (!n[0] || n[0] == '/')
		return 0;
	for (const char *c = n;;) {
		size_t k = strcspn(c, "/");
		if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		if (!c[k])
			return 1;
		c += k + 1;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_bundle b;
	const char *path = fuzz_file("model.llm", data, size);

	if (llm_bundle_open(&b, path) < 0) {
		fuzz_check_message(llm_errmsg(), path);
		return 0;
	}
	CHECK(!b.is_dir && b.size == size);
	for (size_t i = 0; i < b.n; i++) {
		const struct llm_member *m = &b.members[i];
		char *buf;
		size_t len;

		CHECK(safe_name(m->name));
		CHECK(m->offset <= b.size && m->size <= b.size - m->offset);
		CHECK(llm_bundle_find(&b, m->name) == m);
		if (m->size > 65536)
			continue;
		CHECK(llm_bundle_read(&b, m, &buf, &len) == 0);
		CHECK(len == m->size && memcmp(buf, data + m->offset, len) == 0 && buf[len] == 0);
		free(buf);
	}
	llm_bundle_close(&b);
	return 0;
}
