/* lex.h — the lexer: source text to tokens (lang/lexical.md).
 * Knows nothing of the AST or of values. */
#ifndef QH_LEX_H
#define QH_LEX_H

#include <stddef.h>

typedef enum TokKind {
    TK_EOF,
    TK_NEWLINE,
    TK_ERROR,
    TK_NAME,
    TK_NUM,
    TK_IMAG,
    TK_STR,
    /* punctuation */
    TK_LPAREN,
    TK_RPAREN,
    TK_LBRACK,
    TK_RBRACK,
    TK_LBRACE,
    TK_RBRACE,
    TK_COMMA,
    TK_DOT,
    TK_COLON,
    TK_SEMI,
    TK_PLUS,
    TK_MINUS,
    TK_STAR,
    TK_SLASH,
    TK_DSLASH,
    TK_PERCENT,
    TK_AT,
    TK_POW,
    TK_AMP,
    TK_PIPE,
    TK_CARET,
    TK_TILDE,
    TK_SHL,
    TK_SHR,
    TK_ASSIGN,
    TK_PLUSEQ,
    TK_MINUSEQ,
    TK_STAREQ,
    TK_SLASHEQ,
    TK_DSLASHEQ,
    TK_PERCENTEQ,
    TK_POWEQ,
    TK_ATEQ,
    TK_AMPEQ,
    TK_PIPEEQ,
    TK_CARETEQ,
    TK_SHLEQ,
    TK_SHREQ,
    TK_EQ,
    TK_NE,
    TK_LT,
    TK_LE,
    TK_GT,
    TK_GE,
    /* keywords */
    TK_FN,
    TK_QFN,
    TK_ON,
    TK_RETURN,
    TK_IF,
    TK_ELIF,
    TK_ELSE,
    TK_WHILE,
    TK_FOR,
    TK_IN,
    TK_BREAK,
    TK_CONTINUE,
    TK_AND,
    TK_OR,
    TK_NOT,
    TK_TRUE,
    TK_FALSE,
    TK_NIL,
    TK_IMPORT,
    TK_GLOBAL,
    TK_TRY,
    TK_CATCH,
    TK_NKINDS
} TokKind;

typedef struct Token {
    TokKind kind;
    const char *start; /* into the source */
    size_t len;
    int line, col; /* 1-based; col counts bytes */
    double num;    /* TK_NUM, TK_IMAG */
    char *str;     /* TK_STR: decoded (malloc'd, owned by the lexer's caller) ; TK_ERROR: message */
    size_t strlen;
} Token;

typedef struct Lexer {
    const char *src, *p, *end;
    int line;
    const char *line_start;
    int tok_line; /* where the token being read starts */
    const char *tok_line_start;
} Lexer;

void lex_init(Lexer *lx, const char *src, size_t len);
/* Next token. TK_STR and TK_ERROR carry a malloc'd str the caller frees. */
Token lex_next(Lexer *lx);
const char *lex_kind_name(TokKind k);
/* The language's keywords, one by one (i from 0; NULL past the last): for
 * completion. */
const char *lex_keyword(int i);

#endif
