/* util/text.h: the small strict text parsers every reader of a hand-edited
 * file shares (model files, length files, trace CSV, node latency and
 * calibration tables, NPU files). Strict means the whole field must be the
 * number: "12abc", " 3", "+4" and "0x10" are all refused, so a typo is
 * reported instead of silently read.
 *
 * Contract: pure functions of their arguments (txt_sniff_lines reads the
 * file it is given; txt_getopt_whole is getopt_long, with its global
 * state); they never print and never exit.
 */
#ifndef SB_UTIL_TEXT_H
#define SB_UTIL_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Removes spaces, tabs, CR, LF, VT and FF at both ends of s in place; returns the
 * first kept character (inside s). */
char *txt_trim(char *s);

/* 1 for a line (already trimmed) that carries no data: empty or a comment
 * starting with '#'. */
int txt_line_is_blank_or_comment(const char *trimmed);

/* One line of a KEY = VALUE settings file (NPU files, LLM iteration
 * profiles), in place: drops a '#' comment and trims. Returns 0 for a line
 * with no data; 1 with *key and *value trimmed (split at the first '=');
 * -1 when there is no '=', *key then being the trimmed line (to quote). */
int txt_setting(char *line, char **key, char **value);

/* Splits s in place at every sep and trims each field. Stores up to max
 * field pointers and returns the number of fields found (which may exceed
 * max: the caller reports that as an error). */
size_t txt_split(char *s, char sep, char **fields, size_t max);

/* Prints s to f as one shell word (quoted when it needs to be). */
void txt_shell_word(FILE *f, const char *s);

/* Decimal digits only, value <= max. Returns 0, or -1 (out untouched). */
int txt_parse_uint(const char *s, uint64_t max, uint64_t *out);

/* A whole decimal or exponent-form number that is finite. Returns 0, or -1
 * (out untouched). */
int txt_parse_double(const char *s, double *out);

/* Writes the shortest "%.Ng" form (N = 15..17) that reads back as exactly
 * x, so messages show 0.7, not 0.69999999999999996, yet never show two
 * different values the same way. */
void txt_format_double(char *buf, size_t buflen, double x);

/* The decimals that show a figure to the place of its error band's leading
 * digit (band 0.87: 1, band 390: 0; 0 to 9), so a text summary prints no
 * digit its band does not support; a band of 0 or not finite: 6. */
int txt_band_decimals(double band);

/* x with sig significant digits in plain notation, never an exponent
 * (11093 at 3: "11093"; 0.01234: "0.0123"), for text summaries. */
void txt_format_sig(char *buf, size_t buflen, double x, int sig);

/* What a file is, from its first lines: calls judge(line, lineno, ctx) on
 * each raw line (writable, newline kept; lineno from 1) until it returns 0
 * or 1, and returns that; 0 at the end of the file (judge returns -1 to go
 * on), or -1 with err when the file cannot be opened or read. The kind
 * sniffers of hwmodels/registry.c share it. */
int txt_sniff_lines(const char *path, int (*judge)(char *line, unsigned long lineno, void *ctx), void *ctx,
                    char *err, size_t errlen);

/* Whether tok, the argument getopt_long just read a long option from, names
 * it in full ("--name" or "--name=..."): getopt also takes an unambiguous
 * prefix (--po for --policy) and -name, which our command lines refuse so
 * that they read the same when options are added. */
int txt_long_option_whole(const char *tok, const char *name);

/* getopt_long for the helper tools, whole names only: returns what
 * getopt_long returns, except '?' with *abbreviated set to the argument
 * (else NULL) when a long option was given by a prefix. */
struct option;
int txt_getopt_whole(int argc, char **argv, const char *shortopts, const struct option *longopts,
                     const char **abbreviated);

#endif
