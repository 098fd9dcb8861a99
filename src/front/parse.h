/* parse.h — the parser: tokens to an AST (grammar in lang/grammar.ebnf).
 * Knows the lexer and the AST, not resolution or evaluation. */
#ifndef QH_PARSE_H
#define QH_PARSE_H

#include <stdio.h>
#include "ast.h"

/* Parses a whole source. On a syntax error prints the diagnostic to `diag`
 * and returns NULL. The ModInfo owns an arena holding every node. */
ModInfo *parse_source(Source *src, FILE *diag);
/* Frees a module's arena and tables (not its Source). */
void parse_free(ModInfo *m);
/* True if the text is an incomplete statement (open bracket/brace or
 * string still open at the end): the REPL asks for more lines. */
bool parse_incomplete(const char *text, size_t len);
/* The same, as a depth: the brackets and braces still open at the end (at
 * least 1 for a string still open or a trailing backslash), 0 if none. */
int parse_open_depth(const char *text, size_t len);

#endif
