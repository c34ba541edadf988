/* json.h: jansson helpers with house-style errors.
 *
 * Ownership follows jansson: llm_json_load returns a new reference (the
 * caller json_decref's it); getters return borrowed values that live as
 * long as the containing object. */
#ifndef LLM_JSON_H
#define LLM_JSON_H

#include <jansson.h>
#include <stdint.h>

/* Parse a file; on failure -1 with "path:line:col: message". */
json_t *llm_json_load(const char *path);
/* Parse a buffer; `name` is used in messages. */
json_t *llm_json_loadb(const char *buf, size_t len, const char *name);
/* As JavaScript's JSON.parse reads it, for what a template sees: every
 * number a real (a double, -0 included), a duplicate key the last. */
json_t *llm_json_loadb_js(const char *buf, size_t len, const char *name);
/* Serialise with 2-space indentation, keys in insertion order (so output
 * is reproducible byte for byte), and a final newline; caller frees. */
char *llm_json_dumps(const json_t *j);
/* Write atomically (temporary + rename). */
int llm_json_write(const char *path, const json_t *j);

/* Typed getters.  `ctx` names the file (and object) for messages, e.g.
 * "config.json".  The plain forms fail (-1, llm_errmsg set) when the key is
 * missing or has the wrong type; the _opt forms return 0 and leave *out
 * unchanged when the key is missing or null, 1 when found. */
int llm_json_int(const json_t *o, const char *key, const char *ctx, int64_t *out);
int llm_json_num(const json_t *o, const char *key, const char *ctx, double *out);
int llm_json_str(const json_t *o, const char *key, const char *ctx, const char **out);
int llm_json_bool(const json_t *o, const char *key, const char *ctx, int *out);
int llm_json_int_opt(const json_t *o, const char *key, const char *ctx, int64_t *out);
int llm_json_num_opt(const json_t *o, const char *key, const char *ctx, double *out);
int llm_json_str_opt(const json_t *o, const char *key, const char *ctx, const char **out);
int llm_json_bool_opt(const json_t *o, const char *key, const char *ctx, int *out);
/* A required integer that must not be negative. */
int llm_json_u64(const json_t *o, const char *key, const char *ctx, uint64_t *out);

/* Append s[0, n) to out as a JSON string, escaped as JavaScript's
 * JSON.stringify escapes it: '"', '\\', and control characters (\b \f \n
 * \r \t, the others as \u00XX); the bytes are not checked for UTF-8. */
struct llm_buf;
void llm_json_quote(struct llm_buf *out, const char *s, size_t n);

/* A string from a JSON file, fit for a one-line message: s, or "(text
 * with control characters)". */
const char *llm_json_shown(const char *s);

/* A JSON array of the n integers at v (a new reference). */
json_t *llm_json_i64_array(const int64_t *v, size_t n);

#endif
