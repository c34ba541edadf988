/* fuzz_safetensors.c: libFuzzer target for the safetensors reader
 * (lib/formats/safetensors.c, llm_st_open).  An input that starts with '{' is a
 * model.safetensors.index.json beside one valid shard; any other input is
 * a model.safetensors file (length, JSON header, data).  A checkpoint that
 * opens must keep safetensors.h's promises: every tensor's bytes inside
 * its file and of its shape's size, names sorted and found, no two
 * tensors overlapping (the target reads every byte, so ASan catches an
 * escape); a refused one leaves one line naming the file at fault.
 * Build and run: see tests/fuzz/README. */
#include "../../lib/formats/safetensors.h"
#include "../../lib/base/util.h"
#include "fuzzfile.h"

/* The shard an index may name: two f32 tensors "a" [2] and "b" [1]. */
static void
write_shard(void)
{
	static const char hdr[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
				  "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
	uint8_t buf[8 + sizeof(hdr) - 1 + 12] = {0};
	uint64_t n = sizeof(hdr) - 1;

	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)(n >> (8 * i));
	memcpy(buf + 8, hdr, n);
	fuzz_file("model-00001-of-00001.safetensors", buf, sizeof(buf));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int shard;
	struct llm_safetensors st;
	const char *path;
	int index = size > 0 && data[0] == '{';

	if (index && !shard) {
		write_shard();
		shard = 1;
	}
	path = fuzz_file(index ? "model.safetensors.index.json" : "model.safetensors", data, size);
	if (llm_st_open(&st, path) < 0) {
		/* the message names the index or the shard */
		const char *msg = llm_errmsg();
		CHECK(strncmp(msg, fuzz_dir, strlen(fuzz_dir)) == 0 && !strchr(msg, '\n'));
		return 0;
	}
	CHECK(st.nfiles >= 1);
	for (size_t i = 0; i < st.ntensors; i++) {
		const struct llm_st_tensor *t = &st.tensors[i];
		const struct llm_st_file *f = &st.files[t->file];
		int64_t nelem = 1;
		volatile uint8_t sum = 0;

		CHECK(t->file >= 0 && t->file < st.nfiles && t->name);
		CHECK(t->ndim >= 0 && t->ndim <= LLM_MAX_DIMS);
		for (int d = 0; d < t->ndim; d++) {
			CHECK(t->shape[d] >= 0);
			nelem *= t->shape[d];
		}
		CHECK(nelem == t->nelem && (uint64_t)nelem * llm_dtype_size(t->dtype) == t->nbytes);
		CHECK(t->offset <= f->size && t->nbytes <= f->size - t->offset);
		CHECK((const uint8_t *)t->data == (const uint8_t *)f->map.p + t->offset);
		for (size_t b = 0; b < t->nbytes; b++)
			sum += ((const uint8_t *)t->data)[b];
		CHECK(llm_st_find(&st, t->name) == t);
		CHECK(i == 0 || strcmp(st.tensors[i - 1].name, t->name) < 0);
	}
	llm_st_close(&st);
	return 0;
}
