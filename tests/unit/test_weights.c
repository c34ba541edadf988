/* test_weights.c: weights.bin header and mapping, weights.json loading and
 * verification (lib/formats/weights.c), and the RoPE rows of lib/compiler/pack.c. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/compiler/pack.h"
#include "../../lib/formats/weights.h"
#include "t.h"

#define DATA 256

static char binpath[512], jsonpath[512];

/* A weights.bin of DATA bytes (byte i = i) with fingerprint fp. */
static void
write_bin(const char *path, uint64_t fp, size_t data, size_t len)
{
	uint8_t *b = calloc(1, LLM_WEIGHTS_HEADER_BYTES + data);
	llm_weights_header_encode(b, fp, data);
	for (size_t i = 0; i < data; i++)
		b[LLM_WEIGHTS_HEADER_BYTES + i] = (uint8_t)i;
	if (llm_write_file(path, b, len) < 0)
		abort();
	free(b);
}

T_TEST(header_layout)
{
	uint8_t h[LLM_WEIGHTS_HEADER_BYTES];
	struct llm_weights_header d;
	static const uint8_t want[32] = {'L', 'L', 'M', 'W', 'G', 'H', 'T', 0, 1, 0, 0, 0, 0, 0x10, 0, 0, 0x08, 0x07,
		0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0};

	llm_weights_header_encode(h, 0x0102030405060708ULL, 256);
	T_CHECK(memcmp(h, want, 32) == 0);
	for (size_t i = 32; i < sizeof(h); i++)
		T_CHECK(h[i] == 0);
	T_CHECK(llm_weights_header_decode(h, sizeof(h), "w", &d) == 0);
	T_CHECK(d.version == 1 && d.header_bytes == 4096);
	T_CHECK(d.fingerprint == 0x0102030405060708ULL && d.data_bytes == 256);
	h[8] = 2;
	T_CHECK(llm_weights_header_decode(h, sizeof(h), "w", &d) < 0);
	T_CHECKF(strstr(llm_errmsg(), "w: unsupported weights version 2"), "%s", llm_errmsg());
	h[8] = 1;
	h[0] = 'X';
	T_CHECK(llm_weights_header_decode(h, sizeof(h), "w", &d) < 0);
	T_CHECK(strcmp(llm_errmsg(), "w: not a weights file (bad magic)") == 0);
}

T_TEST(open_checks_size_and_plan)
{
	struct llm_weights w;
	struct llm_model m = {0};

	m.path = "model.json";
	m.fingerprint = 42;
	m.header_bytes = LLM_WEIGHTS_HEADER_BYTES;
	m.data_bytes = DATA;

	write_bin(binpath, 42, DATA, LLM_WEIGHTS_HEADER_BYTES + DATA);
	T_CHECKF(llm_weights_open(&w, binpath, &m) == 0, "%s", llm_errmsg());
	T_CHECK(w.data_bytes == DATA && w.data[0] == 0 && w.data[255] == 255);
	T_CHECK((uintptr_t)w.data % 64 == 0);
	llm_weights_close(&w);

	m.fingerprint = 43;
	T_CHECK(llm_weights_open(&w, binpath, &m) < 0);
	T_CHECKF(strstr(llm_errmsg(), "fingerprint 000000000000002a does not match the plan's 000000000000002b"), "%s",
	    llm_errmsg());
	T_CHECK(llm_weights_open(&w, binpath, NULL) == 0);
	llm_weights_close(&w);

	m.fingerprint = 42;
	m.data_bytes = DATA * 2;
	T_CHECK(llm_weights_open(&w, binpath, &m) < 0);
	T_CHECKF(strstr(llm_errmsg(), "differs from model.json"), "%s", llm_errmsg());

	write_bin(binpath, 42, DATA, LLM_WEIGHTS_HEADER_BYTES + DATA - 1);
	T_CHECK(llm_weights_open(&w, binpath, NULL) < 0);
	T_CHECKF(strstr(llm_errmsg(), "size 4351 bytes, header says 4352"), "%s", llm_errmsg());
	write_bin(binpath, 42, DATA, 100);
	T_CHECK(llm_weights_open(&w, binpath, NULL) < 0);
	T_CHECKF(strstr(llm_errmsg(), "truncated header"), "%s", llm_errmsg());
}

static const char manifest_fmt[] =
    "{\"format\": \"%s\", \"fingerprint\": \"000000000000002a\", \"digest\": \"%s\", \"sample\": \"%s\","
    " \"file\": \"weights.bin\",\n"
    " \"header_bytes\": 4096, \"data_bytes\": 256,\n"
    " \"source\": {\"files\": [{\"path\": \"a.safetensors\", \"size\": 9, \"mtime_ns\": 1700000000123456789,"
    " \"header_hash\": \"00000000000000ff\"}]},\n"
    " \"tensors\": [{\"name\": \"x\", \"dtype\": \"bf16\", \"shape\": [2, 2], \"offset\": 64,"
    " \"bytes\": 8, \"checksum\": \"%s\"}]}\n";

T_TEST(manifest_and_verify)
{
	struct llm_weights_manifest j;
	struct llm_weights w;
	char text[2048], sum[17], dig[17], smp[17];
	uint8_t bytes[8];
	uint64_t cs;

	for (int i = 0; i < 8; i++)
		bytes[i] = (uint8_t)(64 + i);
	cs = llm_fnv1a(LLM_FNV_INIT, bytes, 8);
	llm_hex64(cs, sum);
	llm_hex64(llm_weights_digest_step(LLM_FNV_INIT, 64, 8, cs), dig);
	write_bin(binpath, 42, DATA, LLM_WEIGHTS_HEADER_BYTES + DATA);
	T_CHECK(llm_weights_open(&w, binpath, NULL) == 0);
	llm_hex64(llm_weights_sample(w.map.p, w.map.len), smp);
	snprintf(text, sizeof(text), manifest_fmt, "llm-weights/2", dig, smp, sum);
	T_CHECK(llm_write_file(jsonpath, text, strlen(text)) == 0);
	T_CHECKF(llm_weights_manifest_load(&j, jsonpath) == 0, "%s", llm_errmsg());
	T_CHECK(j.fingerprint == 42 && j.data_bytes == 256 && j.nsources == 1 && j.ntensors == 1);
	T_CHECK(j.sources[0].mtime_ns == 1700000000123456789LL && j.sources[0].header_hash == 0xff);
	T_CHECK(j.tensors[0].dtype == LLM_DT_BF16 && j.tensors[0].ndim == 2 && j.tensors[0].offset == 64);
	T_CHECK(llm_weights_manifest_digest(&j) == j.digest);

	T_CHECKF(llm_weights_verify(&w, &j) == 0, "%s", llm_errmsg());
	T_CHECKF(llm_weights_check(w.map.p, w.map.len, "w", &j) == 0, "%s", llm_errmsg());
	/* a checksum edited alone: the digest no longer follows */
	j.tensors[0].checksum ^= 1;
	T_CHECK(llm_weights_verify(&w, &j) < 0);
	T_CHECKF(strstr(llm_errmsg(), "checksums do not give its digest"), "%s", llm_errmsg());
	/* ... and with the digest: the bytes do not */
	j.digest = llm_weights_manifest_digest(&j);
	T_CHECK(llm_weights_check(w.map.p, w.map.len, "w", &j) == 0);
	T_CHECK(llm_weights_verify(&w, &j) < 0);
	T_CHECKF(strstr(llm_errmsg(), "tensor 'x': checksum"), "%s", llm_errmsg());
	j.tensors[0].checksum ^= 1;
	j.digest = llm_weights_manifest_digest(&j);
	/* other bytes in a sampled block (all of a small file is sampled) */
	uint8_t *copy = llm_xmalloc(w.map.len);
	memcpy(copy, w.map.p, w.map.len);
	copy[LLM_WEIGHTS_HEADER_BYTES + 200] ^= 1;
	T_CHECK(llm_weights_check(copy, w.map.len, "w", &j) < 0);
	T_CHECKF(strstr(llm_errmsg(), "w: sampled blocks differ"), "%s", llm_errmsg());
	T_CHECK(llm_weights_check(copy, w.map.len - 1, "w", &j) < 0);
	free(copy);
	llm_weights_close(&w);
	llm_weights_manifest_free(&j);

	snprintf(text, sizeof(text), manifest_fmt, "llm-weights/1", dig, smp, sum);
	T_CHECK(llm_write_file(jsonpath, text, strlen(text)) == 0);
	T_CHECK(llm_weights_manifest_load(&j, jsonpath) < 0);
	T_CHECKF(strstr(llm_errmsg(), "unsupported format version 'llm-weights/1'"), "%s", llm_errmsg());
	snprintf(text, sizeof(text), manifest_fmt, "llm-weights/2", dig, smp, "xyz");
	T_CHECK(llm_write_file(jsonpath, text, strlen(text)) == 0);
	T_CHECK(llm_weights_manifest_load(&j, jsonpath) < 0);
	T_CHECKF(strstr(llm_errmsg(), "tensor 'x': key 'checksum': expected 16 hex digits"), "%s", llm_errmsg());
}

/* The sampled blocks: the header and 64 blocks spread over the data; a
 * change outside them is not seen (llm-run --verify reads everything). */
T_TEST(sample_reads_the_header_and_spread_blocks)
{
	size_t n = LLM_WEIGHTS_HEADER_BYTES + 64 * 65536;
	uint8_t *p = llm_xcalloc(1, n);
	uint64_t h = llm_weights_sample(p, n);

	p[10] = 1; /* the header */
	T_CHECK(llm_weights_sample(p, n) != h);
	p[10] = 0;
	p[n - 1] = 1; /* the last block */
	T_CHECK(llm_weights_sample(p, n) != h);
	p[n - 1] = 0;
	p[LLM_WEIGHTS_HEADER_BYTES + 8192] = 1; /* between blocks 0 and 1 */
	T_CHECK(llm_weights_sample(p, n) == h);
	free(p);
}

T_TEST(rope_rows)
{
	float c[4], s[4];

	llm_rope_row(c, 0, 10000.0, &(struct llm_rope_scaling){0}, 8, 8, 0);
	llm_rope_row(s, 0, 10000.0, &(struct llm_rope_scaling){0}, 8, 8, 1);
	for (int i = 0; i < 4; i++)
		T_CHECK(c[i] == 1.0f && s[i] == 0.0f);
	llm_rope_row(c, 3, 10000.0, &(struct llm_rope_scaling){0}, 8, 8, 0);
	llm_rope_row(s, 3, 10000.0, &(struct llm_rope_scaling){0}, 8, 8, 1);
	/* theta^(-2i/8) for i = 0..3: 1, 0.1, 0.01, 0.001. */
	static const double f[4] = {1, 0.1, 0.01, 0.001};
	for (int i = 0; i < 4; i++) {
		T_CHECKF(fabs(c[i] - cos(3 * f[i])) < 1e-7, "cos %d: %g", i, c[i]);
		T_CHECKF(fabs(s[i] - sin(3 * f[i])) < 1e-7, "sin %d: %g", i, s[i]);
	}
	/* partial rotary (4 of 8 dims) and an attention factor (longrope):
	 * theta^(-2i/4), cos and sin times 1.5, then the passed dims' cos 1
	 * and sin 0 */
	struct llm_rope_scaling af = {.attention_factor = 1.5};
	llm_rope_row(c, 3, 10000.0, &af, 8, 4, 0);
	llm_rope_row(s, 3, 10000.0, &af, 8, 4, 1);
	static const double g[2] = {1, 0.01};
	for (int i = 0; i < 2; i++) {
		T_CHECKF(c[i] == (float)(cos(3 * g[i]) * 1.5), "cos %d: %g", i, c[i]);
		T_CHECKF(s[i] == (float)(sin(3 * g[i]) * 1.5), "sin %d: %g", i, s[i]);
		T_CHECK(c[2 + i] == 1.0f && s[2 + i] == 0.0f);
	}
}

/* llama3 scaling, Llama 3.2's numbers on head_dim 16, theta 500000: the
 * wavelengths 2 pi / inv_freq are 6.3, 33, 168, 875 (below 8192 / 4: kept),
 * 4443 (between: blended) and 23000 and up (above 8192 / 1: / 32). */
T_TEST(rope_llama3)
{
	struct llm_rope_scaling none = {0},
				s = {.llama3 = 1,
					.factor = 32,
					.low_freq_factor = 1,
					.high_freq_factor = 4,
					.original_max_position_embeddings = 8192};
	for (int i = 0; i < 8; i++) {
		double f = llm_rope_inv_freq(500000, &none, i, 16), g = llm_rope_inv_freq(500000, &s, i, 16);
		T_CHECKF(fabs(f - pow(500000, -i / 8.0)) < 1e-15 * f, "default %d: %g", i, f);
		if (i < 4)
			T_CHECKF(g == f, "%d: %g, not %g", i, g, f);
		else if (i > 4)
			T_CHECKF(fabs(g - f / 32) < 1e-15 * f, "%d: %g, not %g / 32", i, g, f);
		else {
			/* smooth = (8192 / (2 pi sqrt(500000)) - 1) / 3 */
			double sm = (8192 / (2 * M_PI * sqrt(500000)) - 1) / 3;
			T_CHECKF(sm > 0.28 && sm < 0.29 && fabs(g - ((1 - sm) * f / 32 + sm * f)) < 1e-15 * f,
			    "%d: %g (smooth %g)", i, g, sm);
		}
	}
}

/* model.json's rope_scaling: written and read back the same, both kinds;
 * freq_factors divide inv_freq; bad ones named. */
T_TEST(rope_scaling_json)
{
	struct llm_rope_scaling l3 = {.llama3 = 1,
					.factor = 32,
					.low_freq_factor = 1,
					.high_freq_factor = 4,
					.original_max_position_embeddings = 8192},
				ff = {.nfactors = 2, .factors = {1, 26.84375}},
				fa = {.nfactors = 2, .factors = {1, 2}, .attention_factor = 1.25}, r;
	const struct llm_rope_scaling *k[3] = {&l3, &ff, &fa};
	for (int i = 0; i < 3; i++) {
		json_t *j = llm_rope_scaling_json(k[i]);
		T_CHECKF(llm_rope_scaling_load(j, "m", &r) == 0, "%s", llm_errmsg());
		T_CHECK(memcmp(&r, k[i], sizeof(r)) == 0);
		json_decref(j);
	}
	T_CHECK(llm_rope_inv_freq(10000, &ff, 1, 4) == 0.01 / 26.84375);
	json_t *j = json_pack("{s:s, s:[f, f]}", "rope_type", "freq_factors", "factors", 1.0, -2.0);
	T_CHECK(llm_rope_scaling_load(j, "m", &r) < 0);
	T_CHECKF(strstr(llm_errmsg(), "m: rope_scaling: factors[1]: expected a positive number"), "%s", llm_errmsg());
	json_decref(j);
	j = json_null();
	T_CHECK(llm_rope_scaling_load(j, "m", &r) == 0 && !r.llama3 && !r.nfactors);
	json_decref(j);
}

int
main(void)
{
	snprintf(binpath, sizeof(binpath), "%s/weights.bin", t_tmpdir());
	snprintf(jsonpath, sizeof(jsonpath), "%s/weights.json", t_tmpdir());
	T_RUN(header_layout);
	T_RUN(open_checks_size_and_plan);
	T_RUN(manifest_and_verify);
	T_RUN(sample_reads_the_header_and_spread_blocks);
	T_RUN(rope_rows);
	T_RUN(rope_llama3);
	T_RUN(rope_scaling_json);
	unlink(binpath);
	unlink(jsonpath);
	rmdir(t_tmpdir());
	return T_DONE();
}
