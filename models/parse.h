/* models/parse.h: what the model files' parser shares between its files
 * (model.c: the file and its directives; node_parse.c: a node line;
 * parse_util.c: tokens, names, numbers; catalogue.c: models by name).
 * Private to models/. */
#ifndef SB_MODEL_PARSE_H
#define SB_MODEL_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

/* Far above any real network (ResNet-152 has ~160 layers); bounds the
 * quadratic duplicate-name check and keeps indices comfortably in uint32. */
#define MDL_MAX_NODES 4096u
/* A GEMM's M*K*N*COUNT must stay an exact integer when a hardware model
 * turns it into double-precision time. */
#define MDL_MAX_MACS (UINT64_C(1) << 53)
#define MDL_EXT ".model"
#define MDL_EXT_LEN 6

struct mdl_parser {
	const char *path;           /* as given, for messages */
	const char *expect_name;    /* built-in name the model line must repeat, or NULL */
	unsigned long line;         /* current line, 1-based */
	char *err;
	size_t errlen;
	struct mdl_model *m;
	uint32_t cap_nodes;
	unsigned long model_line;   /* 0 until the model line is seen */
	unsigned long source_line;
	unsigned long input_line;
	unsigned long output_line;
	unsigned long first_encoder_line;
	unsigned long first_decoder_line;
	unsigned long first_leaf_line;     /* tree models: leaf cells (input_len leaves per request) */
	unsigned long first_internal_line; /* tree models: internal cells */
	unsigned long llm_line;            /* the llm line, 0 if none */
	unsigned long moe_line;            /* the moe line, 0 if none */
	unsigned long estimate_line;       /* the estimate_lengths line, 0 if none */
	unsigned long first_p_line;        /* first node with a term over P (S) */
	unsigned long first_s_line;
};

/* "PATH:LINE: message" for the line being parsed; returns -1. */
__attribute__((format(printf, 2, 3)))
int mdl_parse_fail(struct mdl_parser *p, const char *fmt, ...);
/* The next blank-separated token of *cur (cut in place), or NULL at the end. */
char *mdl_next_token(char **cur);
/* A model or node name: letters, digits, '_', '-', '.', starting with a letter or digit. */
int mdl_name_valid(const char *s);
/* A positive integer within uint32: 0, or -1. */
int mdl_parse_positive(const char *s, uint64_t *out);
/* *out = a * b when it stays at most cap: 0, or -1. */
int mdl_mul_capped(uint64_t a, uint64_t b, uint64_t cap, uint64_t *out);
/* Whether the product of dims stays an exact double (MDL_MAX_MACS). */
int mdl_macs_capped(const uint64_t dims[5]);
/* One node line (the text after "node"), appended to p->m. 0, or -1 with p's error. */
int mdl_parse_node(struct mdl_parser *p, char *rest);
/* The moe line (moe_parse.c), and its checks against the llm line once the file is read. 0, or -1. */
int mdl_parse_moe(struct mdl_parser *p, char *rest);
int mdl_moe_finish(struct mdl_parser *p);
/* An element type's name to enum mdl_dtype; 0 when unknown. */
uint32_t mdl_dtype_parse(const char *s);
/* The llm line's element sizes from bytes= (given: whether it was) and dtype= / kv_dtype=. 0, or -1. */
int mdl_llm_dtypes(struct mdl_parser *p, struct mdl_llm *l, int bytes_given);
/* Loads path; a built-in model's file must name itself expect_name (NULL: any). */
int mdl_load_named(const char *path, const char *expect_name, struct mdl_model **out, char *err, size_t errlen);

#endif
