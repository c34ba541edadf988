/* Unit tests for lib/formats/model.c: model.json loading and validation. */
#include <jansson.h>

#include "../../lib/base/json.h"
#include "../../lib/formats/family.h"
#include "../../lib/formats/model.h"
#include "../../lib/base/util.h"
#include "t.h"

/* A small valid manifest; tests mutate it. */
static json_t *
manifest(void)
{
	static const char *text =
	    "{\"format\": \"llm-model/2\", \"family\": \"qwen2\", \"architecture\": \"Qwen2ForCausalLM\","
	    " \"source\": {\"kind\": \"safetensors\", \"dir\": \"m\", \"files\": [\"model.safetensors\"]},"
	    " \"config\": {\"hidden_size\": 8, \"n_layers\": 1, \"n_heads\": 2, \"n_kv_heads\": 1, \"head_dim\": 4,"
	    "   \"intermediate_size\": 16, \"vocab_size\": 10, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0,"
	    "   \"tie_word_embeddings\": true, \"attention_bias\": false, \"max_position_embeddings\": 32},"
	    " \"dtypes\": {\"weights\": \"bf16\", \"activations\": \"f32\", \"kv\": \"f32\"},"
	    " \"limits\": {\"max_context\": 32, \"prefill_chunk\": 4},"
	    " \"tokenizer\": {\"files\": [\"tokenizer.json\"], \"bos_id\": 1, \"eos_ids\": [2, 3], \"add_bos\": true,"
	    "   \"chat_template\": null},"
	    " \"kv_cache\": {\"layout\": \"layer,kv,kv_head,(k: head_dim,position | v: position,head_dim)\","
	    "   \"dtype\": \"f32\", \"positions\": 48, \"bytes\": 1536},"
	    " \"weights\": {\"file\": \"weights.bin\", \"header_bytes\": 4096, \"alignment\": 64, \"data_bytes\": 256,"
	    "   \"fingerprint\": \"0000000000000000\", \"tensors\": ["
	    "   {\"name\": \"embed\", \"source\": [\"model.embed_tokens.weight\"], \"transform\": \"copy\","
	    "    \"dtype\": \"bf16\", \"shape\": [10, 8], \"offset\": 0, \"bytes\": 160},"
	    "   {\"name\": \"final_norm\", \"source\": [\"model.norm.weight\"], \"transform\": \"copy\","
	    "    \"dtype\": \"f32\", \"shape\": [8], \"offset\": 192, \"bytes\": 32}]},"
	    " \"phases\": [{\"name\": \"decode\", \"entry\": \"llm_decode\", \"file\": \"decode.mlir\", \"tokens\": 1,"
	    "   \"args\": [{\"name\": \"weights\", \"type\": \"memref<?xi8>\"},"
	    "    {\"name\": \"kv\", \"type\": \"memref<?xi8>\"},"
	    "    {\"name\": \"tokens\", \"type\": \"memref<?xi64>\"}, {\"name\": \"pos\", \"type\": \"i64\"},"
	    "    {\"name\": \"n_tokens\", \"type\": \"i64\"}, {\"name\": \"logits\", \"type\": \"memref<?xf32>\"}]}]}";
	json_t *j = llm_json_loadb(text, strlen(text), "test");
	if (!j) {
		fprintf(stderr, "%s\n", llm_errmsg());
		exit(2);
	}
	return j;
}

/* Recompute the fingerprint after a mutation, as llm-import would. */
static void
refingerprint(json_t *j)
{
	json_t *w = json_object_get(j, "weights");
	char hex[17];
	llm_hex64(llm_plan_fingerprint(json_object_get(j, "dtypes"), json_object_get(j, "config"),
		      json_object_get(j, "limits"), json_object_get(w, "tensors")),
	    hex);
	json_object_set_new(w, "fingerprint", json_string(hex));
}

static int
parse(json_t *j, struct llm_model *m)
{
	return llm_model_parse(m, j, "model.json");
}

T_TEST(valid_manifest_loads)
{
	struct llm_model m;
	json_t *j = manifest();
	refingerprint(j);
	T_CHECKF(parse(j, &m) == 0, "%s", llm_errmsg());
	T_CHECK(strcmp(m.family, "qwen2") == 0);
	T_CHECK(m.cfg.hidden_size == 8 && m.cfg.n_kv_heads == 1 && m.cfg.tie_word_embeddings);
	T_CHECK(m.weight_dtype == LLM_DT_BF16 && m.kv_dtype == LLM_DT_F32);
	T_CHECK(m.ntensors == 2 && m.tensors[1].offset == 192 && m.tensors[1].dtype == LLM_DT_F32);
	T_CHECK(m.n_eos == 2 && m.eos_ids[1] == 3 && m.bos_id == 1 && m.add_bos);
	T_CHECK(m.chat_template == NULL);
	T_CHECK(llm_model_tensor(&m, "embed") == &m.tensors[0]);
	T_CHECK(llm_model_tensor(&m, "nope") == NULL);
	T_CHECK(llm_model_phase(&m, "decode")->tokens == 1);
	llm_model_free(&m);
}

T_TEST(stale_fingerprint_is_rejected)
{
	struct llm_model m;
	json_t *j = manifest(); /* fingerprint 0 */
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "fingerprint does not match") != NULL);
}

T_TEST(other_format_versions_are_rejected)
{
	struct llm_model m;
	json_t *j = manifest();
	json_object_set_new(j, "format", json_string("llm-model/3"));
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "unsupported format version 'llm-model/3'") != NULL);
	/* a build of before the run-time context: its phases index a cache of
	 * max_context positions */
	j = manifest();
	json_object_set_new(j, "format", json_string("llm-model/1"));
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "'llm-model/1' (this program reads llm-model/2; build the model again)") != NULL);
	j = manifest();
	json_object_set_new(j, "format", json_string("llm-weights/2"));
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "not a model manifest") != NULL);
}

static json_t *
tensor(json_t *j, int i)
{
	return json_array_get(json_object_get(json_object_get(j, "weights"), "tensors"), (size_t)i);
}

T_TEST(overlapping_or_misaligned_tensors_are_rejected)
{
	struct llm_model m;
	json_t *j = manifest();
	json_object_set_new(tensor(j, 1), "offset", json_integer(128));
	refingerprint(j);
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "overlaps 'embed'") != NULL);

	j = manifest();
	json_object_set_new(tensor(j, 1), "offset", json_integer(200));
	refingerprint(j);
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "not 64-byte aligned") != NULL);

	j = manifest();
	json_object_set_new(tensor(j, 1), "offset", json_integer(256));
	refingerprint(j);
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "extends past data_bytes") != NULL);
}

T_TEST(byte_sizes_must_match_shapes)
{
	struct llm_model m;
	json_t *j = manifest();
	json_object_set_new(tensor(j, 0), "bytes", json_integer(161));
	refingerprint(j);
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "bytes 161 != shape x dtype size 160") != NULL);

	j = manifest();
	json_array_set_new(json_object_get(tensor(j, 0), "shape"), 0, json_integer(-10));
	refingerprint(j);
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "expected a positive integer") != NULL);
}

/* The cache's size is derived from the config: an edited one (which the
 * runtime would allocate, too small for the kernels) is refused. */
T_TEST(kv_cache_size_is_checked_against_the_config)
{
	static const int64_t bad[] = {16, 4096, 1000000, 1535};
	struct llm_model m;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = manifest();
		json_object_set_new(json_object_get(j, "kv_cache"), "bytes", json_integer(bad[i]));
		refingerprint(j);
		T_CHECK(parse(j, &m) < 0);
		T_CHECKF(strstr(llm_errmsg(), "the config implies 1536") != NULL, "%s", llm_errmsg());
	}
	json_t *j = manifest();
	json_object_set_new(json_object_get(j, "kv_cache"), "positions", json_integer(32));
	refingerprint(j);
	T_CHECK(parse(j, &m) < 0 && strstr(llm_errmsg(), "kv_cache.positions must be 48") != NULL);
}

T_TEST(missing_and_mistyped_keys_are_named)
{
	struct llm_model m;
	json_t *j = manifest();
	json_object_del(json_object_get(j, "config"), "head_dim");
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "missing key 'head_dim'") != NULL);

	j = manifest();
	json_object_set_new(json_object_get(j, "dtypes"), "weights", json_string("q4"));
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "unsupported dtype 'q4'") != NULL);

	j = manifest();
	json_object_set_new(json_object_get(j, "config"), "n_kv_heads", json_integer(3));
	refingerprint(j);
	T_CHECK(parse(j, &m) == -1);
	T_CHECK(strstr(llm_errmsg(), "not a multiple of n_kv_heads") != NULL);
}

T_TEST(fingerprint_changes_with_the_plan)
{
	json_t *j = manifest();
	json_t *w = json_object_get(j, "weights");
	uint64_t a = llm_plan_fingerprint(json_object_get(j, "dtypes"), json_object_get(j, "config"),
	    json_object_get(j, "limits"), json_object_get(w, "tensors"));
	json_object_set_new(json_object_get(j, "limits"), "max_context", json_integer(64));
	uint64_t b = llm_plan_fingerprint(json_object_get(j, "dtypes"), json_object_get(j, "config"),
	    json_object_get(j, "limits"), json_object_get(w, "tensors"));
	T_CHECK(a != b);
	char hex[17];
	uint64_t back;
	llm_hex64(a, hex);
	T_CHECK(llm_parse_hex64(hex, &back) == 0 && back == a);
	T_CHECK(llm_parse_hex64("xyz", &back) == -1);
	T_CHECK(llm_parse_hex64("ABCDEF0123456789", &back) == -1);
	json_decref(j);
}

T_TEST(load_reports_json_errors_with_position)
{
	struct llm_model m;
	char *p = llm_path_join(t_tmpdir(), "bad.json");
	T_CHECK(llm_write_file(p, "{\"format\": }", 12) == 0);
	T_CHECK(llm_model_load(&m, p) == -1);
	T_CHECK(strstr(llm_errmsg(), "bad.json:1:") != NULL);
	free(p);
}

/* llm_model_build writes what llm_model_parse reads: the manifest's
 * facts come back, and building the parsed model again gives the same
 * text (the derived kv_cache, fingerprint and phases included). */
T_TEST(build_and_parse_round_trip)
{
	struct llm_model d, m, m2;
	const char *files[] = {"tokenizer.json"}, *src[] = {"model.safetensors"};
	/* a table */
	/* clang-format off */
	struct llm_plan_tensor t[2] = {
		{.name = "embed", .nsource = 1, .source = {"model.embed_tokens.weight"}, .transform = "copy",
		    .dtype = LLM_DT_BF16, .ndim = 2, .shape = {10, 8}, .offset = 0, .bytes = 160},
		{.name = "layers.0.wq", .nsource = 1, .source = {"blk.0.attn_q.weight"}, .transform = "unpermute_qk",
		    .heads = 2, .dtype = LLM_DT_F32, .ndim = 2, .shape = {8, 8}, .offset = 192, .bytes = 256},
	};
	/* clang-format on */

	llm_model_init(&d);
	T_CHECK(strcmp(d.weights_file, "weights.bin") == 0 && d.bos_id == -1 && d.act_dtype == LLM_DT_F32);
	d.family = "qwen2";
	d.architecture = "Qwen2ForCausalLM";
	d.source_kind = "safetensors";
	d.source_dir = "/m";
	d.source_files = src;
	d.nsource_files = 1;
	d.cfg = (struct llm_model_config){8, 1, 2, 1, 4, 16, 10, 32, 1e-6, 10000, 1, 0, 0, 0, {0}, 4, 0, 0, 0, 0, 0, 0};
	d.weight_dtype = LLM_DT_BF16;
	d.kv_dtype = LLM_DT_F16;
	d.max_context = 32;
	d.prefill_chunk = 4;
	d.tokenizer_files = files;
	d.ntokenizer_files = 1;
	d.bos_id = 1;
	d.n_eos = 1;
	d.eos_ids[0] = 2;
	d.add_bos = 1;
	d.chat_template = "chatml";
	d.data_bytes = 448;
	d.tensors = t;
	d.ntensors = 2;
	json_t *j = llm_model_build(&d);
	char *text = llm_json_dumps(j);
	T_CHECKF(llm_model_parse(&m, j, "model.json") == 0, "%s", llm_errmsg());
	T_CHECK(strcmp(m.architecture, "Qwen2ForCausalLM") == 0 && strcmp(m.source_dir, "/m") == 0);
	T_CHECK(m.kv_dtype == LLM_DT_F16 && m.prefill_chunk == 4 && m.add_bos && m.bos_id == 1);
	T_CHECK(strcmp(m.chat_template, "chatml") == 0 && m.n_eos == 1 && m.eos_ids[0] == 2);
	T_CHECK(m.ntensors == 2 && m.tensors[1].heads == 2 && m.tensors[1].offset == 192);
	T_CHECK(m.kv_bytes == 1 * 2 * 1 * (uint64_t)llm_kv_positions(32) * 4 * 2);
	/* the cache of a smaller run-time context: rows of P(n) positions */
	T_CHECK(llm_kv_bytes(&m, 32) == m.kv_bytes);
	T_CHECK(llm_kv_bytes(&m, 1) == 1 * 2 * 1 * (uint64_t)llm_kv_positions(1) * 4 * 2);
	T_CHECK(llm_kv_bytes(&m, 17) == 1 * 2 * 1 * 48 * 4 * 2);
	T_CHECK(m.nphases == LLM_PH_COUNT);
	for (int i = 0; i < LLM_PH_COUNT; i++) {
		T_CHECK(strcmp(m.phases[i].name, llm_phase_specs[i].name) == 0);
		T_CHECK(strcmp(m.phases[i].entry, llm_phase_specs[i].entry) == 0);
		T_CHECK(m.phases[i].tokens == (llm_phase_specs[i].single ? 1 : 4));
	}
	T_CHECK(json_array_size(json_object_get(json_array_get(json_object_get(m.root, "phases"), 0), "args")) ==
	    LLM_PHASE_NARGS);
	json_t *j2 = llm_model_build(&m);
	char *text2 = llm_json_dumps(j2);
	T_CHECK(strcmp(text, text2) == 0);
	T_CHECKF(llm_model_parse(&m2, j2, "model.json") == 0, "%s", llm_errmsg());
	T_CHECK(m2.fingerprint == m.fingerprint);
	llm_model_free(&m2);
	llm_model_free(&m);
	free(text);
	free(text2);
}

T_TEST(phase_kinds_come_from_the_phase_table)
{
	char k[32];
	T_CHECK(llm_phase_kind("prefill_kv", k, sizeof(k)) == 0 && strcmp(k, "prefill") == 0);
	T_CHECK(llm_phase_kind("decode", k, sizeof(k)) == 0 && strcmp(k, "decode") == 0);
	T_CHECK(llm_phase_kind("glue", k, sizeof(k)) == 0 && strcmp(k, "glue") == 0);
	T_CHECK(llm_phase_kind("Bad-kind", k, sizeof(k)) == -1);
	T_CHECK(strstr(llm_errmsg(), "bad kind 'Bad-kind'") != NULL);
	T_CHECK(llm_phase_spec_by_name("prefill_kv")->optional);
	T_CHECK(llm_phase_spec_by_name("nope") == NULL);
	/* embed: a prefill's kind and rows, optional (older builds lack it),
	 * its output every row's hidden state */
	const struct llm_phase_spec *e = llm_phase_spec_by_name("embed");
	T_CHECK(e && e->optional && !e->single && e->out == LLM_OUT_HIDDEN);
	T_CHECK(llm_phase_kind("embed", k, sizeof(k)) == 0 && strcmp(k, "prefill") == 0);
	T_CHECK(llm_phase_out_floats(e, 16, 1000, 64) == 16 * 64);
	T_CHECK(llm_phase_out_floats(llm_phase_spec_by_name("prefill"), 16, 1000, 64) == 1000);
}

/* llama.cpp's size class by family and shape (its src/models/<arch>.cpp),
 * as llama-bench names a model (llm_family_size_class). */
T_TEST(size_classes_are_llama_cpps)
{
	T_CHECK(strcmp(llm_family_size_class(LLM_FAMILY_QWEN2, 28, 1536, 12, 2, 151936), "1.5B") == 0);
	T_CHECK(strcmp(llm_family_size_class(LLM_FAMILY_QWEN2, 28, 3584, 28, 4, 152064), "7B") == 0);
	T_CHECK(strcmp(llm_family_size_class(LLM_FAMILY_LLAMA, 32, 4096, 32, 8, 128256), "8B") == 0);
	T_CHECK(strcmp(llm_family_size_class(LLM_FAMILY_MISTRAL, 32, 4096, 32, 8, 32768), "7B") == 0);
	T_CHECK(strcmp(llm_family_size_class(LLM_FAMILY_QWEN3, 28, 1024, 16, 8, 151936), "0.6B") == 0);
	T_CHECK(strcmp(llm_family_size_class(LLM_FAMILY_GEMMA3, 26, 1152, 4, 1, 262144), "1B") == 0);
	T_CHECK(strcmp(llm_family_size_class(LLM_FAMILY_PHI3, 32, 3072, 24, 8, 200064), "3B") == 0);
	T_CHECK(strcmp(llm_family_size_class(LLM_FAMILY_QWEN2, 2, 64, 4, 2, 151936), "?B") == 0);
}

int
main(void)
{
	llm_setprog("test_model");
	T_RUN(valid_manifest_loads);
	T_RUN(stale_fingerprint_is_rejected);
	T_RUN(other_format_versions_are_rejected);
	T_RUN(overlapping_or_misaligned_tensors_are_rejected);
	T_RUN(byte_sizes_must_match_shapes);
	T_RUN(kv_cache_size_is_checked_against_the_config);
	T_RUN(missing_and_mistyped_keys_are_named);
	T_RUN(fingerprint_changes_with_the_plan);
	T_RUN(load_reports_json_errors_with_position);
	T_RUN(build_and_parse_round_trip);
	T_RUN(phase_kinds_come_from_the_phase_table);
	T_RUN(size_classes_are_llama_cpps);
	return T_DONE();
}
