/* grammar.h: grammar-constrained sampling: GBNF (llama.cpp's grammar
 * notation) parsed into rules, a matcher that follows text through them
 * byte by byte, and the mask of the tokens whose bytes the grammar can
 * take next.
 *
 * The notation: rules `name ::= alternatives`, one a line (a newline
 * inside parentheses, after `::=` or `|`, or before a line that starts
 * with `|` continues it); `|` alternatives; "literals" and [character
 * classes] ([^...] negated, a-z ranges) with the escapes \n \t \r \\ \"
 * \[ \] \- \/ \xHH \uHHHH \UHHHHHHHH; `.` any character; ( ) groups;
 * the repetitions * + ? {m} {m,} {m,n} {,n}; # comments to the end of the
 * line; names of letters, digits, - and _.  `root` is where text starts.
 * A grammar is refused, with "line L, column C: what" (the column counts
 * characters from 1), for a syntax error, a rule defined twice, a
 * reference to an undefined rule, no root, a rule that can start with
 * itself (left recursion, which a matcher of this kind cannot follow:
 * also a repetition of something that can be empty) and a rule that can
 * never end.
 *
 * The matcher, as llama.cpp's llama-grammar: a state is a set of stacks
 * of positions in the rules, each stack's top a character class that the
 * next code point must match; a stack that is empty means the text so
 * far is a whole sentence of the grammar.  Text comes as bytes: a state
 * holds the first bytes of a code point that a token cut, and takes them
 * only if some class admits a code point that starts with them.  Stack
 * frames are interned in the grammar (each (position, parent) once) with
 * the stacks that follow them memoised, so that a step is a few lookups;
 * the grammar is therefore not shared between threads. */
#ifndef LLM_GRAMMAR_H
#define LLM_GRAMMAR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/util.h"

struct llm_grammar;

/* Parse len bytes of GBNF.  NULL with llm_errmsg "line L, column C: what"
 * for a grammar that is refused. */
struct llm_grammar *llm_grammar_parse(const char *text, size_t len);
void llm_grammar_free(struct llm_grammar *g);

/* Where the matcher is: the set of stacks (frame ids of g; 0 is the empty
 * stack) and the bytes of a code point begun but not finished.  Owned by
 * the caller; zero it, then llm_grammar_start. */
struct llm_grammar_state {
	uint32_t *set;
	size_t n, cap;
	uint32_t cp; /* the partial code point's bits so far */
	int need;    /* its continuation bytes still to come; 0: none */
	int len;     /* the bytes of its whole sequence */
};
int llm_grammar_start(struct llm_grammar *g, struct llm_grammar_state *st);
void llm_grammar_state_copy(struct llm_grammar_state *dst, const struct llm_grammar_state *src);
void llm_grammar_state_free(struct llm_grammar_state *st);

/* Take n bytes: 1 and st advanced if the grammar can take them (a
 * code point they end inside of included), 0 and st unchanged if not.
 *
 * The matcher follows at most 65536 stacks a state and 2^22 frames a
 * grammar: an ambiguous grammar's stacks can double with each byte.
 * Past that, start, accept and mask return -1 with llm_errmsg "the grammar
 * is too ambiguous to follow: ...", for that state and every one after
 * (the grammar is of no more use).  start returns 0 otherwise. */
int llm_grammar_accept(struct llm_grammar *g, struct llm_grammar_state *st, const char *p, size_t n);
/* 1 if the text so far is a whole sentence (no partial code point). */
int llm_grammar_complete(const struct llm_grammar_state *st);
/* 1 if it is, and nothing can follow it. */
int llm_grammar_done(const struct llm_grammar_state *st);

/* A vocabulary's token texts, sorted so that the mask walks each shared
 * prefix once.  bytes[i] (lens[i] bytes) is token i's text; NULL for a
 * token that is not text (a special token), which the mask never allows. */
struct llm_grammar_vocab;
struct llm_grammar_vocab *llm_grammar_vocab_new(size_t n, const char *const *bytes, const size_t *lens);
void llm_grammar_vocab_free(struct llm_grammar_vocab *v);
/* Token id's text (*len bytes, not NUL-terminated), or NULL: not text. */
const char *llm_grammar_vocab_token(const struct llm_grammar_vocab *v, size_t id, size_t *len);
/* allowed[i] = 1 for each token whose whole text st can take, else 0
 * (special and empty tokens 0).  Returns how many are allowed (-1: see
 * above). */
int64_t llm_grammar_mask(struct llm_grammar *g, const struct llm_grammar_state *st, const struct llm_grammar_vocab *v,
    uint8_t *allowed);

/* JSON schema (len bytes of JSON text) to GBNF text (a new string): see
 * json_schema.c for what is followed, ignored and refused.  NULL with
 * llm_errmsg for a schema that cannot be turned into one. */
char *llm_json_schema_grammar(const char *schema, size_t len);
/* Append s as a GBNF literal: "..." with its quotes, backslashes and
 * control characters escaped. */
void llm_grammar_literal(struct llm_buf *b, const char *s);
/* Several schemas as rules of one grammar: schemas[i] becomes the rule
 * names[i] (names the caller's own rules do not use), the rules they need
 * shared; paths[i] (NULL: none) prefixes the places in schemas[i] that
 * messages name.  The GBNF text without a root (a new string), or NULL
 * with llm_errmsg. */
char *llm_json_schema_rules(const json_t *const *schemas, const char *const *names, const char *const *paths, size_t n);

#endif
