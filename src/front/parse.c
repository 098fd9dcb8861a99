/* parse.c — recursive-descent parser with precedence climbing.
 * Produces the AST of ast.h from the lexer's tokens; a syntax error is
 * reported once (with line and caret) and stops the parse. Each parse
 * function names the grammar rule it implements (lang/grammar.ebnf).
 * Knows the lexer and the AST, not resolution or evaluation. */
#include "parse.h"
#include "qh_assert.h"
#include "diag.h"
#include "lex.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEST 400

typedef struct Parser {
    Token *toks;
    int ntok, pos;
    int depth;      /* open ( [ and dict { : newlines do not end statements */
    int nest;       /* recursion guard */
    int loops, fns; /* enclosing loops in this function; enclosing functions */
    Source *src;
    Arena *ar;
    ModInfo *mod;
    FILE *diag;
    jmp_buf fail;
    FnProto **protos;
    int nprotos, capprotos;
    ObjStr **interned;
    size_t ninterned, capinterned; /* string constants, one object per content */
} Parser;

static _Noreturn void error_tok(Parser *p, const Token *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_print(p->diag, p->src, t->line, t->col, "error", msg);
    longjmp(p->fail, 1);
}

/* the current token; inside brackets newlines are skipped */
static Token *peek(Parser *p)
{
    if (p->depth > 0)
        while (p->toks[p->pos].kind == TK_NEWLINE) p->pos++;
    Token *t = &p->toks[p->pos];
    if (t->kind == TK_ERROR) error_tok(p, t, "%s", t->str); /* the lexer's own message */
    return t;
}
static TokKind peekk(Parser *p) { return peek(p)->kind; }
static Token *advance(Parser *p)
{
    Token *t = peek(p);
    if (t->kind != TK_EOF) p->pos++;
    return t;
}
static bool accept(Parser *p, TokKind k)
{
    if (peekk(p) == k) {
        advance(p);
        return true;
    }
    return false;
}

static const char *tok_desc(const Token *t, char *buf, size_t n)
{
    if (t->kind == TK_NAME) {
        snprintf(buf, n, "name '%.*s'", (int)(t->len > 40 ? 40 : t->len), t->start);
        return buf;
    }
    if (t->kind == TK_NUM || t->kind == TK_IMAG) {
        snprintf(buf, n, "number '%.*s'", (int)(t->len > 40 ? 40 : t->len), t->start);
        return buf;
    }
    return lex_kind_name(t->kind);
}

static Token *expect(Parser *p, TokKind k, const char *what)
{
    Token *t = peek(p);
    if (t->kind != k) {
        char b[80];
        error_tok(p, t, "expected %s %s, found %s", lex_kind_name(k), what,
                  tok_desc(t, b, sizeof b));
    }
    return advance(p);
}

static void enter(Parser *p)
{
    if (++p->nest > MAX_NEST)
        error_tok(p, peek(p), "nesting too deep (more than %d levels)", MAX_NEST);
}
static void leave(Parser *p)
{
    qh_assert(p->nest > 0); /* every leave matches an enter */
    p->nest--;
}

static Node *node(Parser *p, NodeKind k, const Token *t)
{
    qh_assert((unsigned)k < N_NKINDS && t->line >= 1 && t->col >= 1);
    Node *n = arena_alloc(p->ar, sizeof(Node));
    n->kind = (uint16_t)k;
    n->line = t->line;
    n->col = t->col;
    return n;
}

/* String constants are interned per file: equal constants are one object,
 * so a dict built with {"x": ...} and read with p["x"] finds its key by
 * pointer (and the evaluator can cache where it was). The table grows in
 * the arena, so a syntax error leaks nothing. */
static ObjStr *const_str(Parser *p, const char *s, size_t len)
{
    uint32_t h = str_hash(s, len);
    if (p->capinterned) {
        size_t mask = p->capinterned - 1;
        for (size_t i = h & mask; p->interned[i]; i = (i + 1) & mask) {
            ObjStr *c = p->interned[i];
            if (c->hash == h && c->len == len && memcmp(c->s, s, len) == 0) return c;
        }
    }
    if ((p->ninterned + 1) * 2 > p->capinterned) {
        size_t nc = p->capinterned ? p->capinterned * 2 : 64;
        ObjStr **nt = arena_alloc(p->ar, nc * sizeof(ObjStr *));
        for (size_t i = 0; i < p->capinterned; i++) {
            ObjStr *c = p->interned[i];
            if (!c) continue;
            size_t j = c->hash & (nc - 1);
            while (nt[j]) j = (j + 1) & (nc - 1);
            nt[j] = c;
        }
        p->interned = nt;
        p->capinterned = nc;
    }
    ObjStr *o = arena_alloc(p->ar, sizeof(ObjStr) + len + 1);
    o->h.rc = OBJ_IMMORTAL;
    o->h.type = T_STR;
    o->len = (uint32_t)len;
    o->cap = (uint32_t)len;
    memcpy(o->s, s, len);
    str_finish(o);
    str_nchars(o); /* counted now: shared strings are never written later */
    size_t j = h & (p->capinterned - 1);
    while (p->interned[j]) j = (j + 1) & (p->capinterned - 1);
    p->interned[j] = o;
    p->ninterned++;
    return o;
}

static const char *name_of(Parser *p, const Token *t)
{
    return arena_strndup(p->ar, t->start, t->len);
}

/* a growable array of pointers, copied into the arena when done */
typedef struct Vec {
    void **v;
    int n, cap;
} Vec;
/* grows in the arena, so a syntax error (a longjmp) leaks nothing */
static void vec_push_ar(Arena *ar, Vec *v, void *x)
{
    if (v->n == v->cap) {
        int nc = v->cap ? v->cap * 2 : 8;
        void **nv = arena_alloc(ar, (size_t)nc * sizeof(void *));
        if (v->n) memcpy(nv, v->v, (size_t)v->n * sizeof(void *));
        v->v = nv;
        v->cap = nc;
    }
    qh_assert(v->n < v->cap);
    v->v[v->n++] = x;
}
#define vec_push(vec, x) vec_push_ar(p->ar, (vec), (x))
static void *vec_done(Parser *p, Vec *v)
{
    if (!v->n) return arena_alloc(p->ar, sizeof(void *));
    return v->v;
}

#define MAX_CHAIN 20000
static void chain_step(Parser *p, int *n, const Token *t)
{
    if (++*n > MAX_CHAIN)
        error_tok(p, t, "expression too long (more than %d operators in a row); split it",
                  MAX_CHAIN);
}

static Node *expr(Parser *p);
static Node *block(Parser *p);
static Node *statement(Parser *p);

/* params -> '(' [ NAME ['=' expr] {',' NAME ['=' expr]} ] ')' */
static void params(Parser *p, FnProto *f)
{
    expect(p, TK_LPAREN, "to open the parameter list");
    p->depth++;
    Vec names = { 0 }, defs = { 0 };
    bool seen_default = false;
    while (peekk(p) != TK_RPAREN) {
        Token *t = expect(p, TK_NAME, "as a parameter name");
        const char *nm = name_of(p, t);
        for (int i = 0; i < names.n; i++)
            if (strcmp(names.v[i], nm) == 0) error_tok(p, t, "duplicate parameter '%s'", nm);
        vec_push(&names, (void *)nm);
        Node *d = NULL;
        if (accept(p, TK_ASSIGN)) {
            d = expr(p);
            seen_default = true;
        } else if (seen_default)
            error_tok(p, t, "parameter '%s' without a default follows one with a default", nm);
        vec_push(&defs, d);
        if (!accept(p, TK_COMMA)) break;
    }
    p->depth--;
    expect(p, TK_RPAREN, "to close the parameter list");
    f->nparams = names.n;
    f->params = vec_done(p, &names);
    f->defaults = vec_done(p, &defs);
    f->param_keys = arena_alloc(p->ar, (size_t)(f->nparams + 1) * sizeof(ObjStr *));
    for (int i = 0; i < f->nparams; i++)
        f->param_keys[i] = const_str(p, f->params[i], strlen(f->params[i]));
}

static FnProto *new_proto(Parser *p, const Token *t, const char *name)
{
    FnProto *f = arena_alloc(p->ar, sizeof(FnProto));
    f->name = name;
    f->line = t->line;
    f->col = t->col;
    f->mod = p->mod;
    if (p->nprotos == p->capprotos) {
        p->capprotos = p->capprotos ? p->capprotos * 2 : 16;
        p->protos = xrealloc(p->protos, (size_t)p->capprotos * sizeof(FnProto *));
    }
    p->protos[p->nprotos++] = f;
    return f;
}

/* a function's block: break/continue refer to its own loops only */
static Node *fn_body(Parser *p)
{
    int loops = p->loops;
    p->loops = 0;
    p->fns++;
    Node *b = block(p);
    p->fns--;
    p->loops = loops;
    return b;
}

/* fnexpr -> 'fn' params block */
static Node *fn_expr(Parser *p)
{
    Token *t = advance(p);
    Node *n = node(p, N_FNEXPR, t);
    FnProto *f = new_proto(p, t, "<anonymous>");
    params(p, f);
    f->body = fn_body(p);
    n->u.fn = f;
    return n;
}

static Node *or_expr(Parser *p);

static _Noreturn void no_genexp(Parser *p)
{
    error_tok(p, peek(p),
              "qh has no generator expressions: use a list comprehension [... for ...]");
}

/* comp_for -> 'for' NAME {',' NAME} 'in' or_expr { 'if' or_expr } ; one or
 * more make the clauses of a comprehension (the iterables and conditions
 * are or_exprs, so that 'if' after them begins a condition) */
static CompClause *comp_clauses(Parser *p, int *nclauses)
{
    CompClause *cl = NULL;
    int n = 0, cap = 0;
    while (peekk(p) == TK_FOR) {
        advance(p);
        if (n == cap) {
            int nc = cap ? cap * 2 : 2;
            CompClause *ncl = arena_alloc(p->ar, (size_t)nc * sizeof(CompClause));
            if (n) memcpy(ncl, cl, (size_t)n * sizeof(CompClause));
            cl = ncl;
            cap = nc;
        }
        qh_assert(n < cap);
        CompClause *c = &cl[n++];
        memset(c, 0, sizeof *c);
        Vec vars = { 0 }, conds = { 0 };
        do {
            Token *v = expect(p, TK_NAME, "as the comprehension variable");
            Node *vn = node(p, N_NAME, v);
            vn->u.var.name = name_of(p, v);
            vec_push(&vars, vn);
        } while (accept(p, TK_COMMA));
        expect(p, TK_IN, "after the comprehension variable");
        c->iter = or_expr(p);
        while (accept(p, TK_IF)) vec_push(&conds, or_expr(p));
        c->nvars = vars.n;
        c->vars = vec_done(p, &vars);
        c->nconds = conds.n;
        c->conds = vec_done(p, &conds);
    }
    *nclauses = n;
    return cl;
}

/* call args -> '(' [arg {',' arg}] ')' ; arg -> expr | NAME '=' expr */
static Node *call(Parser *p, Node *callee)
{
    Token *t = advance(p); /* ( */
    Node *n = node(p, N_CALL, t);
    n->line = callee->line;
    n->col = callee->col;
    p->depth++;
    Vec args = { 0 };
    KwArg *kw = NULL;
    int nkw = 0, capkw = 0;
    while (peekk(p) != TK_RPAREN) {
        Token *a = peek(p);
        if (a->kind == TK_NAME && p->toks[p->pos + 1].kind == TK_ASSIGN) {
            advance(p);
            advance(p);
            const char *nm = name_of(p, a);
            for (int i = 0; i < nkw; i++)
                if (strcmp(kw[i].name, nm) == 0)
                    error_tok(p, a, "keyword argument '%s' repeated", nm);
            if (nkw >= 64) error_tok(p, a, "too many keyword arguments (at most 64)");
            if (nkw == capkw) {
                int nc = capkw ? capkw * 2 : 4;
                KwArg *nk = arena_alloc(p->ar, (size_t)nc * sizeof(KwArg));
                if (nkw) memcpy(nk, kw, (size_t)nkw * sizeof(KwArg));
                kw = nk;
                capkw = nc;
            }
            kw[nkw].name = nm;
            kw[nkw].key = const_str(p, nm, strlen(nm));
            kw[nkw].value = expr(p);
            nkw++;
        } else {
            if (nkw) error_tok(p, a, "positional argument follows keyword argument");
            vec_push(&args, expr(p));
            if (peekk(p) == TK_FOR) no_genexp(p);
        }
        if (!accept(p, TK_COMMA)) break;
    }
    p->depth--;
    expect(p, TK_RPAREN, "to close the argument list");
    n->u.call.fn = callee;
    n->u.call.nargs = args.n;
    n->u.call.args = vec_done(p, &args);
    n->u.call.nkw = nkw;
    n->u.call.kw = kw;
    return n;
}

/* subscript -> expr | [expr] ':' [expr] [':' [expr]] */
static Node *subscript(Parser *p)
{
    Token *t = peek(p);
    Node *lo = NULL;
    if (t->kind != TK_COLON) {
        lo = expr(p);
        if (peekk(p) != TK_COLON) return lo;
    }
    advance(p); /* : */
    Node *n = node(p, N_SLICE, t);
    n->u.slice.lo = lo;
    TokKind k = peekk(p);
    if (k != TK_COLON && k != TK_RBRACK && k != TK_COMMA) n->u.slice.hi = expr(p);
    if (accept(p, TK_COLON)) {
        k = peekk(p);
        if (k != TK_RBRACK && k != TK_COMMA) n->u.slice.step = expr(p);
    }
    return n;
}

/* primary -> NUM | IMAG | STR | true | false | nil | NAME | '(' expr ')' | list | dict | fnexpr:
 * one prefix function per token that starts one (primaries[], as Lua's
 * simpleexp and clox's rules[]), called with that token current */
typedef Node *(*PrefixFn)(Parser *p, Token *t);

static Node *prim_num(Parser *p, Token *t)
{
    advance(p);
    Node *n = node(p, t->kind == TK_NUM ? N_NUM : N_IMAG, t);
    n->u.num = t->num;
    return n;
}

static Node *prim_str(Parser *p, Token *t)
{
    advance(p);
    Node *n = node(p, N_STR, t);
    /* adjacent string literals concatenate, as in C and Python (the
     * buffer grows in the arena: an error midway leaks nothing) */
    if (peek(p)->kind == TK_STR) {
        size_t cap = t->strlen + 64, len = t->strlen;
        char *buf = arena_alloc(p->ar, cap);
        memcpy(buf, t->str, t->strlen);
        while (peek(p)->kind == TK_STR) {
            Token *s2 = advance(p);
            if (len + s2->strlen + 1 > cap) {
                size_t nc = (len + s2->strlen + 1) * 2;
                char *nb = arena_alloc(p->ar, nc);
                memcpy(nb, buf, len);
                buf = nb;
                cap = nc;
            }
            qh_assert(len + s2->strlen < cap); /* room for the text and a NUL */
            memcpy(buf + len, s2->str, s2->strlen);
            len += s2->strlen;
        }
        n->u.str = const_str(p, buf, len);
    } else {
        n->u.str = const_str(p, t->str, t->strlen);
    }
    return n;
}

/* true, false, nil */
static Node *prim_const(Parser *p, Token *t)
{
    advance(p);
    return node(p, t->kind == TK_TRUE ? N_TRUE : t->kind == TK_FALSE ? N_FALSE : N_NIL, t);
}

static Node *prim_name(Parser *p, Token *t)
{
    advance(p);
    Node *n = node(p, N_NAME, t);
    n->u.var.name = name_of(p, t);
    return n;
}

static Node *prim_fn(Parser *p, Token *t)
{
    (void)t;
    return fn_expr(p);
}

static Node *prim_paren(Parser *p, Token *t)
{
    (void)t;
    advance(p);
    p->depth++;
    Node *n = expr(p);
    if (peekk(p) == TK_COMMA) error_tok(p, peek(p), "qh has no tuples: use a list [a, b]");
    if (peekk(p) == TK_FOR) no_genexp(p);
    p->depth--;
    expect(p, TK_RPAREN, "to close the parenthesis");
    return n;
}

static Node *prim_list(Parser *p, Token *t)
{
    /* list -> '[' [expr {',' expr} [',']] ']' ; listcomp -> '[' expr comp_for {comp_for} ']' */
    advance(p);
    Node *n = node(p, N_LIST, t);
    p->depth++;
    Vec items = { 0 };
    if (peekk(p) != TK_RBRACK) {
        Node *first = expr(p);
        if (peekk(p) == TK_FOR) {
            n->kind = N_LISTCOMP;
            n->u.comp.elt = first;
            n->u.comp.clauses = comp_clauses(p, &n->u.comp.nclauses);
            p->depth--;
            expect(p, TK_RBRACK, "to close the list comprehension");
            return n;
        }
        vec_push(&items, first);
        while (accept(p, TK_COMMA) && peekk(p) != TK_RBRACK) vec_push(&items, expr(p));
    }
    p->depth--;
    expect(p, TK_RBRACK, "to close the list");
    n->u.list.n = items.n;
    n->u.list.items = vec_done(p, &items);
    return n;
}

static Node *prim_dict(Parser *p, Token *t)
{
    advance(p);
    Node *n = node(p, N_DICT, t);
    p->depth++;
    Vec ks = { 0 }, vs = { 0 };
    /* dict -> '{' [expr ':' expr {',' expr ':' expr} [',']] '}'
     * dictcomp -> '{' expr ':' expr comp_for {comp_for} '}' */
    while (peekk(p) != TK_RBRACE) {
        Node *k = expr(p);
        if (peekk(p) == TK_FOR)
            error_tok(p, peek(p),
                      "qh has no sets: write a dict comprehension {x: true for ...} or a list "
                      "comprehension [x for ...]");
        if (peekk(p) == TK_COMMA || peekk(p) == TK_RBRACE)
            error_tok(p, peek(p),
                      "qh has no sets: a dict needs key: value (use a list [a, b] or a dict "
                      "{a: true})");
        expect(p, TK_COLON, "between a dict key and its value");
        Node *v = expr(p);
        if (!ks.n && peekk(p) == TK_FOR) {
            n->kind = N_DICTCOMP;
            n->u.comp.key = k;
            n->u.comp.elt = v;
            n->u.comp.clauses = comp_clauses(p, &n->u.comp.nclauses);
            p->depth--;
            expect(p, TK_RBRACE, "to close the dict comprehension");
            return n;
        }
        vec_push(&ks, k);
        vec_push(&vs, v);
        if (!accept(p, TK_COMMA)) break;
    }
    p->depth--;
    expect(p, TK_RBRACE, "to close the dict");
    n->u.dict.n = ks.n;
    n->u.dict.keys = vec_done(p, &ks);
    n->u.dict.vals = vec_done(p, &vs);
    return n;
}

static const PrefixFn primaries[TK_NKINDS] = {
    [TK_NUM] = prim_num,     [TK_IMAG] = prim_num,    [TK_STR] = prim_str,
    [TK_TRUE] = prim_const,  [TK_FALSE] = prim_const, [TK_NIL] = prim_const,
    [TK_NAME] = prim_name,   [TK_FN] = prim_fn,       [TK_LPAREN] = prim_paren,
    [TK_LBRACK] = prim_list, [TK_LBRACE] = prim_dict,
};

/* t starts no expression */
static _Noreturn void no_primary(Parser *p, Token *t)
{
    switch ((int)t->kind) {
    case TK_ERROR: error_tok(p, t, "%s", t->str);
    case TK_EOF: error_tok(p, t, "unexpected end of file: expected an expression");
    case TK_NEWLINE: error_tok(p, t, "unexpected end of line: expected an expression");
    default: {
        char b[80];
        error_tok(p, t, "expected an expression, found %s", tok_desc(t, b, sizeof b));
    }
    }
}

static Node *primary(Parser *p)
{
    Token *t = peek(p);
    qh_assert((unsigned)t->kind < TK_NKINDS);
    PrefixFn f = primaries[t->kind];
    if (!f) no_primary(p, t);
    return f(p, t);
}

/* postfix -> primary { '(' args ')' | '[' subscript {',' subscript} ']' | '.' NAME } */
static Node *postfix(Parser *p)
{
    Node *n = primary(p);
    int chain = 0;
    for (;;) {
        TokKind k = peekk(p);
        if (k == TK_LPAREN || k == TK_LBRACK || k == TK_DOT) chain_step(p, &chain, peek(p));
        if (k == TK_LPAREN) {
            n = call(p, n);
        } else if (k == TK_LBRACK) {
            Token *t = advance(p);
            Node *ix = node(p, N_INDEX, t);
            p->depth++;
            Vec items = { 0 };
            do {
                if (peekk(p) == TK_RBRACK) break;
                vec_push(&items, subscript(p));
            } while (accept(p, TK_COMMA));
            p->depth--;
            expect(p, TK_RBRACK, "to close the index");
            if (!items.n) error_tok(p, t, "empty index");
            ix->u.index.obj = n;
            ix->u.index.nidx = items.n;
            ix->u.index.idx = vec_done(p, &items);
            n = ix;
        } else if (k == TK_DOT) {
            Token *t = advance(p);
            Token *nm = expect(p, TK_NAME, "after '.'");
            Node *m = node(p, N_MEMBER, t);
            m->u.member.obj = n;
            m->u.member.name = name_of(p, nm);
            m->u.member.key = const_str(p, nm->start, nm->len);
            n = m;
        } else {
            return n;
        }
    }
}

/* Binary operators, from one table (as Lua's priority[] and clox's rules[]).
 * Each operator token has a left and a right priority: subexpr(limit) takes
 * the operators whose left priority is above `limit` and parses each one's
 * right operand with subexpr(right). A left-associative operator has
 * left == right; '**' is right-associative and its right operand is a unary
 * expression (2 ** -1), so its right priority is P_UNARY. From loosest to
 * tightest (lang/lexical.md, lang/grammar.ebnf): */
enum {
    P_NONE,
    P_OR,    /* or */
    P_AND,   /* and */
    P_NOT,   /* prefix not: its operand is a comparison or tighter */
    P_CMP,   /* == != < <= > >= in, not in (no chaining) */
    P_BOR,   /* | */
    P_BXOR,  /* ^ */
    P_BAND,  /* & */
    P_SHIFT, /* << >> */
    P_ARITH, /* + - */
    P_TERM,  /* * / // % @ */
    P_UNARY, /* prefix - + ~ */
    P_POW    /* ** */
};

typedef struct BinRule {
    uint8_t left, right; /* 0: not a binary operator */
    uint8_t op;          /* BinOp of an N_BINARY */
    uint8_t kind;        /* N_BINARY, N_AND or N_OR */
} BinRule;

static const BinRule rules[TK_NKINDS] = {
    [TK_OR] = { P_OR, P_OR, 0, N_OR },
    [TK_AND] = { P_AND, P_AND, 0, N_AND },
    [TK_EQ] = { P_CMP, P_CMP, OP_EQ, N_BINARY },
    [TK_NE] = { P_CMP, P_CMP, OP_NE, N_BINARY },
    [TK_LT] = { P_CMP, P_CMP, OP_LT, N_BINARY },
    [TK_LE] = { P_CMP, P_CMP, OP_LE, N_BINARY },
    [TK_GT] = { P_CMP, P_CMP, OP_GT, N_BINARY },
    [TK_GE] = { P_CMP, P_CMP, OP_GE, N_BINARY },
    [TK_IN] = { P_CMP, P_CMP, OP_IN, N_BINARY },
    [TK_NOT] = { P_CMP, P_CMP, OP_NOTIN, N_BINARY }, /* only as 'not' 'in' (binop_rule) */
    [TK_PIPE] = { P_BOR, P_BOR, OP_BOR, N_BINARY },
    [TK_CARET] = { P_BXOR, P_BXOR, OP_BXOR, N_BINARY },
    [TK_AMP] = { P_BAND, P_BAND, OP_BAND, N_BINARY },
    [TK_SHL] = { P_SHIFT, P_SHIFT, OP_SHL, N_BINARY },
    [TK_SHR] = { P_SHIFT, P_SHIFT, OP_SHR, N_BINARY },
    [TK_PLUS] = { P_ARITH, P_ARITH, OP_ADD, N_BINARY },
    [TK_MINUS] = { P_ARITH, P_ARITH, OP_SUB, N_BINARY },
    [TK_STAR] = { P_TERM, P_TERM, OP_MUL, N_BINARY },
    [TK_SLASH] = { P_TERM, P_TERM, OP_DIV, N_BINARY },
    [TK_DSLASH] = { P_TERM, P_TERM, OP_IDIV, N_BINARY },
    [TK_PERCENT] = { P_TERM, P_TERM, OP_MOD, N_BINARY },
    [TK_AT] = { P_TERM, P_TERM, OP_MATMUL, N_BINARY },
    [TK_POW] = { P_POW, P_UNARY, OP_POW, N_BINARY },
};

/* the rule of the binary operator at the current token, or NULL */
static const BinRule *binop_rule(Parser *p)
{
    TokKind k = peekk(p);
    if (k == TK_NOT && p->toks[p->pos + 1].kind != TK_IN) return NULL;
    return rules[k].left ? &rules[k] : NULL;
}

static Node *subexpr(Parser *p, int limit);

/* unary -> ('-' | '+' | '~') unary | power ;  not_expr -> 'not' not_expr | comparison
 * (a 'not' only where a not_expr may stand: not as the operand of a comparison or tighter) */
static Node *prefix(Parser *p, int limit)
{
    Token *t = peek(p);
    TokKind k = t->kind;
    if (k == TK_NOT && limit <= P_NOT) {
        advance(p);
        Node *n = node(p, N_NOT, t);
        enter(p);
        n->u.bin.a = subexpr(p, P_NOT);
        leave(p);
        return n;
    }
    if (k != TK_MINUS && k != TK_PLUS && k != TK_TILDE) return postfix(p);
    advance(p);
    enter(p);
    Node *operand = subexpr(p, P_UNARY);
    leave(p);
    if (k == TK_MINUS && (operand->kind == N_NUM || operand->kind == N_IMAG) &&
        operand->line == t->line) {
        /* fold -constant; keeps the literal's own node */
        operand->u.num = -operand->u.num;
        operand->col = t->col;
        return operand;
    }
    Node *n = node(p, N_UNARY, t);
    n->op = k == TK_MINUS ? OP_NEG : k == TK_PLUS ? OP_POS : OP_INVERT;
    n->u.bin.a = operand;
    return n;
}

/* subexpr -> prefix { binop subexpr }, the operators above `limit` (precedence climbing).
 * A run of one level's operators counts against MAX_CHAIN (the run of a lower level
 * starts a new count); '**' recurses on its right, under the nesting guard. */
static Node *subexpr(Parser *p, int limit)
{
    Node *a = prefix(p, limit);
    int chain = 0, level = P_NONE;
    for (const BinRule *r; (r = binop_rule(p)) && r->left > limit;) {
        /* left-associative (left == right), or '**', whose right operand is a unary */
        qh_assert(r->right == r->left || (r->kind == N_BINARY && r->op == OP_POW));
        qh_assert(r->kind == N_BINARY || r->kind == N_AND || r->kind == N_OR);
        Token *t = advance(p);
        if (t->kind == TK_NOT) advance(p); /* the 'in' of 'not in' */
        bool right_assoc = r->right < r->left;
        if (!right_assoc) {
            if (r->left != level) chain = 0;
            level = r->left;
            chain_step(p, &chain, t);
        }
        Node *n = node(p, (NodeKind)r->kind, t);
        n->op = r->kind == N_BINARY ? r->op : 0;
        n->u.bin.a = a;
        if (right_assoc) enter(p);
        n->u.bin.b = subexpr(p, r->right);
        if (right_assoc) leave(p);
        a = n;
        if (r->left == P_CMP && (r = binop_rule(p)) && r->left == P_CMP)
            error_tok(p, peek(p), "comparisons do not chain: write (a < b) and (b < c)");
    }
    return a;
}

/* or_expr -> and_expr { 'or' and_expr }, and all tighter levels (subexpr) */
static Node *or_expr(Parser *p)
{
    enter(p);
    Node *a = subexpr(p, P_NONE);
    leave(p);
    return a;
}

/* expr -> or_expr [ 'if' or_expr 'else' expr ]   (right-associative) */
static Node *expr(Parser *p)
{
    enter(p);
    Node *a = or_expr(p);
    if (peekk(p) == TK_IF) {
        Token *t = advance(p);
        Node *n = node(p, N_COND, t);
        n->u.ifs.then = a;
        n->u.ifs.cond = or_expr(p);
        Token *e = peek(p);
        if (e->kind != TK_ELSE) {
            char b[80];
            error_tok(p, e,
                      "expected 'else' in the conditional expression (a if c else b), found %s",
                      tok_desc(e, b, sizeof b));
        }
        advance(p);
        n->u.ifs.els = expr(p);
        a = n;
    }
    leave(p);
    return a;
}

/* rhs -> expr {',' expr}   (several values make a list, as `return a, b`) */
static Node *rhs(Parser *p)
{
    Node *e = expr(p);
    if (peekk(p) != TK_COMMA) return e;
    Node *l = node(p, N_LIST, &p->toks[p->pos]);
    l->line = e->line;
    l->col = e->col;
    Vec items = { 0 };
    vec_push(&items, e);
    while (accept(p, TK_COMMA)) vec_push(&items, expr(p));
    l->u.list.n = items.n;
    l->u.list.items = vec_done(p, &items);
    return l;
}

/* statements end at a newline, ';', before '}' or at the end */
static void end_statement(Parser *p)
{
    Token *t = &p->toks[p->pos];
    if (t->kind == TK_NEWLINE || t->kind == TK_SEMI) {
        p->pos++;
        return;
    }
    if (t->kind == TK_RBRACE || t->kind == TK_EOF) return;
    char b[80];
    if (t->kind == TK_ERROR) error_tok(p, t, "%s", t->str);
    error_tok(p, t, "expected a newline or ';' after the statement, found %s",
              tok_desc(t, b, sizeof b));
}

/* block -> '{' { statement } '}' */
static Node *block(Parser *p)
{
    int saved = p->depth;
    Token *t = peek(p);
    if (t->kind != TK_LBRACE) {
        char b[80];
        if (t->kind == TK_COLON)
            error_tok(p, t,
                      "expected '{' to open a block, found ':' (qh blocks are { ... }, not ':' and "
                      "indentation)");
        error_tok(p, t, "expected '{' to open a block, found %s", tok_desc(t, b, sizeof b));
    }
    advance(p);
    p->depth = 0;
    enter(p);
    Node *n = node(p, N_BLOCK, t);
    Vec items = { 0 };
    for (;;) {
        while (p->toks[p->pos].kind == TK_NEWLINE || p->toks[p->pos].kind == TK_SEMI) p->pos++;
        Token *c = &p->toks[p->pos];
        if (c->kind == TK_RBRACE) {
            p->pos++;
            break;
        }
        if (c->kind == TK_EOF) error_tok(p, t, "unterminated block: this '{' is never closed");
        vec_push(&items, statement(p));
    }
    leave(p);
    qh_assert(p->depth == 0); /* the brackets opened inside the block are closed */
    p->depth = saved;
    n->u.list.n = items.n;
    n->u.list.items = vec_done(p, &items);
    return n;
}

static void check_target(Parser *p, Node *t)
{
    if (t->kind == N_NAME || t->kind == N_INDEX) return;
    Token fake = { .line = t->line, .col = t->col };
    if (t->kind == N_MEMBER) error_tok(p, &fake, "cannot assign to a module member");
    error_tok(p, &fake, "cannot assign to this expression");
}

/* peeks past newlines for 'elif' / 'else' after a closing brace */
static TokKind peek_past_newlines(Parser *p, int *at)
{
    int j = p->pos;
    while (p->toks[j].kind == TK_NEWLINE) j++;
    *at = j;
    return p->toks[j].kind;
}

/* if -> 'if' expr block { 'elif' expr block } [ 'else' (block | if) ] */
static Node *if_stmt(Parser *p)
{
    Token *t = advance(p);
    Node *n = node(p, N_IF, t);
    n->u.ifs.cond = expr(p);
    n->u.ifs.then = block(p);
    int at;
    TokKind k = peek_past_newlines(p, &at);
    if (k == TK_ELIF) {
        p->pos = at;
        enter(p);
        n->u.ifs.els = if_stmt(p); /* elif parses like if */
        leave(p);
    } else if (k == TK_ELSE) {
        p->pos = at + 1;
        if (peekk(p) == TK_IF) {
            enter(p);
            n->u.ifs.els = if_stmt(p);
            leave(p);
        } else
            n->u.ifs.els = block(p);
    }
    return n;
}

/* augop -> '+=' | '-=' | '*=' | '/=' | '//=' | '%=' | '**=' | '@=' | '&=' | '|=' | '^=' | '<<='
 * | '>>=' */
static int aug_op(TokKind k)
{
    switch ((int)k) {
    case TK_PLUSEQ: return OP_ADD;
    case TK_MINUSEQ: return OP_SUB;
    case TK_STAREQ: return OP_MUL;
    case TK_SLASHEQ: return OP_DIV;
    case TK_DSLASHEQ: return OP_IDIV;
    case TK_PERCENTEQ: return OP_MOD;
    case TK_POWEQ: return OP_POW;
    case TK_ATEQ: return OP_MATMUL;
    case TK_AMPEQ: return OP_BAND;
    case TK_PIPEEQ: return OP_BOR;
    case TK_CARETEQ: return OP_BXOR;
    case TK_SHLEQ: return OP_SHL;
    case TK_SHREQ: return OP_SHR;
    default: return -1;
    }
}

/* fndef -> 'fn' NAME params block */
static Node *fndef_stmt(Parser *p)
{
    Token *t = advance(p);
    Token *nm = advance(p);
    Node *n = node(p, N_FNDEF, t);
    FnProto *f = new_proto(p, t, name_of(p, nm));
    params(p, f);
    f->body = fn_body(p);
    n->u.fn = f;
    return n;
}

/* qfndef -> 'qfn' NAME params ['on' expr] block */
static Node *qfndef_stmt(Parser *p)
{
    Token *t = advance(p);
    Token *nm = expect(p, TK_NAME, "after 'qfn'");
    Node *n = node(p, N_FNDEF, t);
    FnProto *f = new_proto(p, t, name_of(p, nm));
    f->is_qfn = true;
    params(p, f);
    if (accept(p, TK_ON)) f->device = expr(p);
    f->body = fn_body(p);
    n->u.fn = f;
    return n;
}

/* while -> 'while' expr block */
static Node *while_stmt(Parser *p)
{
    Token *t = advance(p);
    Node *n = node(p, N_WHILE, t);
    n->u.whiles.cond = expr(p);
    p->loops++;
    n->u.whiles.body = block(p);
    p->loops--;
    return n;
}

/* for -> 'for' NAME {',' NAME} 'in' expr block */
static Node *for_stmt(Parser *p)
{
    Token *t = advance(p);
    Node *n = node(p, N_FOR, t);
    Vec vars = { 0 };
    do {
        Token *v = expect(p, TK_NAME, "as the loop variable");
        Node *vn = node(p, N_NAME, v);
        vn->u.var.name = name_of(p, v);
        vec_push(&vars, vn);
    } while (accept(p, TK_COMMA));
    expect(p, TK_IN, "after the loop variable");
    n->u.fors.nvars = vars.n;
    n->u.fors.vars = vec_done(p, &vars);
    n->u.fors.var = n->u.fors.vars[0];
    n->u.fors.iter = expr(p);
    p->loops++;
    n->u.fors.body = block(p);
    p->loops--;
    return n;
}

/* try -> 'try' block 'catch' [NAME] block */
static Node *try_stmt(Parser *p)
{
    Token *t = advance(p);
    Node *n = node(p, N_TRY, t);
    n->u.tries.body = block(p);
    int at;
    if (peek_past_newlines(p, &at) == TK_CATCH) p->pos = at;
    expect(p, TK_CATCH, "after the try block");
    if (peekk(p) == TK_NAME) {
        Token *v = advance(p);
        Node *vn = node(p, N_NAME, v);
        vn->u.var.name = name_of(p, v);
        n->u.tries.var = vn;
    }
    n->u.tries.handler = block(p);
    return n;
}

/* return -> 'return' [expr {',' expr}] */
static Node *return_stmt(Parser *p)
{
    Token *t = advance(p);
    if (!p->fns) error_tok(p, t, "'return' outside a function");
    Node *n = node(p, N_RETURN, t);
    TokKind k = p->toks[p->pos].kind;
    if (k != TK_NEWLINE && k != TK_SEMI && k != TK_RBRACE && k != TK_EOF) n->u.expr.expr = rhs(p);
    return n;
}

/* break | continue (one function: they differ in their node kind only) */
static Node *jump_stmt(Parser *p)
{
    Token *t = advance(p);
    if (!p->loops)
        error_tok(p, t, "'%s' outside a loop", t->kind == TK_BREAK ? "break" : "continue");
    return node(p, t->kind == TK_BREAK ? N_BREAK : N_CONTINUE, t);
}

/* import -> 'import' NAME */
static Node *import_stmt(Parser *p)
{
    Token *t = advance(p);
    Token *nm = expect(p, TK_NAME, "after 'import'");
    Node *n = node(p, N_IMPORT, t);
    n->u.import.name = name_of(p, nm);
    Node *vn = node(p, N_NAME, nm);
    vn->u.var.name = n->u.import.name;
    n->u.import.var = vn;
    return n;
}

/* global -> 'global' NAME {',' NAME} */
static Node *global_stmt(Parser *p)
{
    Token *t = advance(p);
    Node *n = node(p, N_GLOBALDECL, t);
    Vec names = { 0 };
    do {
        Token *nm = expect(p, TK_NAME, "after 'global'");
        vec_push(&names, (void *)name_of(p, nm));
    } while (accept(p, TK_COMMA));
    n->u.global.n = names.n;
    n->u.global.names = vec_done(p, &names);
    return n;
}

/* simple -> expr [ {',' expr} '=' expr | augop expr ] */
static Node *simple_stmt(Parser *p)
{
    Token *t = peek(p);
    Node *n, *e = expr(p);
    TokKind k = peekk(p);
    if (k == TK_COMMA) {
        Vec targets = { 0 };
        check_target(p, e);
        vec_push(&targets, e);
        while (accept(p, TK_COMMA)) {
            Node *x = expr(p);
            check_target(p, x);
            vec_push(&targets, x);
        }
        Token *eq = expect(p, TK_ASSIGN, "after the assignment targets");
        n = node(p, N_DESTRUCT, eq);
        n->line = e->line;
        n->col = e->col;
        n->u.destruct.n = targets.n;
        n->u.destruct.targets = vec_done(p, &targets);
        n->u.destruct.value = rhs(p);
    } else if (k == TK_ASSIGN) {
        Token *eq = advance(p);
        check_target(p, e);
        n = node(p, N_ASSIGN, eq);
        n->line = e->line;
        n->col = e->col;
        n->u.assign.target = e;
        n->u.assign.value = rhs(p);
        if (peekk(p) == TK_ASSIGN) error_tok(p, peek(p), "chained assignment is not supported");
    } else if (aug_op(k) >= 0) {
        Token *op = advance(p);
        check_target(p, e);
        n = node(p, N_AUGASSIGN, op);
        n->op = (uint8_t)aug_op(k);
        n->u.assign.target = e;
        n->u.assign.value = expr(p);
    } else {
        n = node(p, N_EXPRSTMT, t);
        n->line = e->line;
        n->col = e->col;
        n->u.expr.expr = e;
    }
    return n;
}

/* statement -> fndef | qfndef | if | while | for | try | return | break | continue
 *            | import | global | simple ; one function per kind, chosen by the first token,
 * then the statement's end */
static Node *statement(Parser *p)
{
    Token *t = peek(p);
    Node *n;
    switch ((int)t->kind) {
    case TK_FN: n = p->toks[p->pos + 1].kind == TK_NAME ? fndef_stmt(p) : simple_stmt(p); break;
    case TK_QFN: n = qfndef_stmt(p); break;
    case TK_IF: n = if_stmt(p); break;
    case TK_WHILE: n = while_stmt(p); break;
    case TK_FOR: n = for_stmt(p); break;
    case TK_TRY: n = try_stmt(p); break;
    case TK_RETURN: n = return_stmt(p); break;
    case TK_BREAK:
    case TK_CONTINUE: n = jump_stmt(p); break;
    case TK_IMPORT: n = import_stmt(p); break;
    case TK_GLOBAL: n = global_stmt(p); break;
    case TK_ERROR: error_tok(p, t, "%s", t->str);
    case TK_RBRACE: error_tok(p, t, "unexpected '}' with no block open");
    default: n = simple_stmt(p); break;
    }
    end_statement(p);
    return n;
}

static void free_tokens(Token *toks, int n)
{
    for (int i = 0; i < n; i++) free(toks[i].str);
    free(toks);
}

ModInfo *parse_source(Source *src, FILE *diag)
{
    Parser p;
    memset(&p, 0, sizeof p);
    p.src = src;
    p.diag = diag;
    Lexer lx;
    lex_init(&lx, src->text, src->len);
    int cap = 256;
    p.toks = xmalloc((size_t)cap * sizeof(Token));
    for (;;) {
        if (p.ntok + 2 >= cap) {
            cap *= 2;
            p.toks = xrealloc(p.toks, (size_t)cap * sizeof(Token));
        }
        Token t = lex_next(&lx);
        p.toks[p.ntok++] = t;
        if (t.kind == TK_EOF) break;
        if (t.kind == TK_ERROR) {
            /* report lexical errors where the parser meets them (keeps order), but
             * an error token always stops the lexer here */
            Token e = t;
            e.kind = TK_EOF;
            e.str = NULL;
            e.start = lx.p;
            e.len = 0;
            p.toks[p.ntok++] = e;
            break;
        }
    }
    p.toks[p.ntok] = p.toks[p.ntok - 1]; /* one spare EOF for 2-token lookahead */
    p.toks[p.ntok].str = NULL;
    p.ar = arena_new();
    ModInfo *m = xcalloc(1, sizeof *m);
    m->src = src;
    m->arena = p.ar;
    p.mod = m;
    if (setjmp(p.fail)) {
        free_tokens(p.toks, p.ntok);
        free(p.protos);
        arena_free(p.ar);
        free(m);
        return NULL;
    }
    Token *t0 = &p.toks[0];
    Node *body = node(&p, N_BLOCK, t0);
    Vec items = { 0 };
    for (;;) {
        while (p.toks[p.pos].kind == TK_NEWLINE || p.toks[p.pos].kind == TK_SEMI) p.pos++;
        if (p.toks[p.pos].kind == TK_EOF) break;
        Node *s = statement(&p);
        vec_push_ar(p.ar, &items, s);
    }
    body->u.list.n = items.n;
    body->u.list.items = vec_done(&p, &items);
    m->body = body;
    m->protos = p.protos;
    m->nprotos = p.nprotos;
    free_tokens(p.toks, p.ntok);
    return m;
}

void parse_free(ModInfo *m)
{
    if (!m) return;
    for (int i = 0; i < m->nprotos; i++) {
        FnProto *f = m->protos[i];
        free(f->local_is_cell);
        free(f->local_names);
        free(f->upvals);
        free(f->global_reads);
        free(f->global_calls);
    }
    free(m->protos);
    free(m->gnames);
    free(m->gkeys);
    free(m->gassigned);
    free(m->gbuiltin);
    if (m->gindex) decref(v_obj(&m->gindex->h));
    arena_free(m->arena);
    free(m);
}

int parse_open_depth(const char *text, size_t len)
{
    /* a backslash at the very end joins the next line */
    size_t e = len;
    while (e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\n' ||
                     text[e - 1] == '\r'))
        e--;
    if (e > 0 && text[e - 1] == '\\') return 1;
    Lexer lx;
    lex_init(&lx, text, len);
    int depth = 0;
    for (;;) {
        Token t = lex_next(&lx);
        if (t.kind == TK_ERROR) {
            bool open_string = t.str && strcmp(t.str, "unterminated string") == 0 && lx.p >= lx.end;
            free(t.str);
            return open_string ? (depth > 0 ? depth : 1) : 0;
        }
        free(t.str);
        if (t.kind == TK_EOF) break;
        if (t.kind == TK_LPAREN || t.kind == TK_LBRACK || t.kind == TK_LBRACE)
            depth++;
        else if (t.kind == TK_RPAREN || t.kind == TK_RBRACK || t.kind == TK_RBRACE)
            depth--;
    }
    return depth > 0 ? depth : 0;
}

bool parse_incomplete(const char *text, size_t len) { return parse_open_depth(text, len) > 0; }
