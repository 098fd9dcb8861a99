/* ast.h — the syntax tree, annotated by the resolver and the analyser.
 *
 * Built by the parser, completed by resolve (names -> slots) and analyse
 * (dependencies, purity), then immutable: every thread reads it, none writes
 * it. Nodes live in one arena per source file. Knows nothing of evaluation. */
#ifndef QH_AST_H
#define QH_AST_H

#include <stdbool.h>
#include <stddef.h>
#include "value.h"

typedef enum NodeKind {
    /* expressions */
    N_NUM,
    N_IMAG,
    N_STR,
    N_TRUE,
    N_FALSE,
    N_NIL,
    N_NAME, /* resolved into one of the next five */
    N_LOCAL,
    N_LOCALCELL,
    N_UPVAL,
    N_GLOBAL,
    N_BUILTIN,
    N_SELF, /* a local function naming itself: the running closure */
    N_LIST,
    N_DICT,
    N_UNARY,
    N_BINARY,
    N_AND,
    N_OR,
    N_NOT,
    N_CALL,
    N_INDEX,
    N_SLICE,
    N_MEMBER,
    N_FNEXPR,
    N_COND, /* a if c else b */
    N_LISTCOMP,
    N_DICTCOMP, /* [e for ...], {k: v for ...} */
    /* statements */
    N_EXPRSTMT,
    N_ASSIGN,
    N_AUGASSIGN,
    N_DESTRUCT,
    N_IF,
    N_WHILE,
    N_FOR,
    N_BREAK,
    N_CONTINUE,
    N_RETURN,
    N_FNDEF,
    N_TRY,
    N_IMPORT,
    N_GLOBALDECL,
    N_BLOCK,
    N_PASS,
    N_NKINDS
} NodeKind;

typedef struct Node Node;
struct FnProto;
struct ModInfo;

/* How a statement ended (the evaluator's). */
typedef enum ExecStatus { S_OK, S_BREAK, S_CONTINUE, S_RETURN, S_ERR } ExecStatus;
/* A node's handler: the evaluator chooses one per node from its kind and
 * shape (eval.c, "prepare") before the node first runs. */
typedef Value (*EvalFn)(VM *vm, Node *n);
typedef ExecStatus (*ExecFn)(VM *vm, Node *s);

typedef struct KwArg {
    const char *name;
    ObjStr *key;
    Node *value;
} KwArg;

/* One `for NAMES in ITER {if COND}` clause of a comprehension. The names
 * are local to the comprehension (lang/statements.md#comprehensions): the
 * resolver gives them slots of their own in the enclosing frame. */
typedef struct CompClause {
    Node **vars;
    int nvars; /* N_NAME, resolved to N_LOCAL / N_LOCALCELL */
    Node *iter;
    Node **conds;
    int nconds;
} CompClause;

/* Per-statement dependency facts (analyse.c); indices into the module's
 * global names. */
typedef struct DepInfo {
    struct LaStraight *straight; /* straight-line lookahead (laplan.h), in the arena, or NULL */
    int *writes;
    int nwrites;
    int *reads;
    int nreads; /* value-needing reads */
    int *passes;
    int npasses; /* reads that only pass a value on (no waiting) */
    int *qcalls;
    int nqcalls; /* global slots of qfns called */
    bool impure; /* prints, reads input, imports, assigns a global */
} DepInfo;

struct Node {
    uint16_t kind;
    uint8_t op;   /* BinOp for N_UNARY/N_BINARY/N_AUGASSIGN */
    uint8_t flag; /* the evaluator's: operand shapes (eval.c) */
    int line, col;
    /* Set by the evaluator's prepare pass, on the main thread, before any
     * thread runs the node; read-only afterwards. */
    union {
        EvalFn ev;
        ExecFn ex;
    } run;
    union {
        double num;  /* N_NUM, N_IMAG */
        ObjStr *str; /* N_STR (immortal) */
        struct {
            const char *name;
            int slot;
        } var; /* names; slot per kind */
        struct {
            Node **items;
            int n;
        } list; /* N_LIST, N_BLOCK */
        struct {
            Node **keys, **vals;
            int n;
        } dict;
        struct {
            Node *a, *b;
        } bin; /* binary, and/or, unary/not (a) */
        struct {
            Node *fn;
            Node **args;
            int nargs;
            KwArg *kw;
            int nkw;
        } call;
        struct {
            Node *obj;
            Node **idx;
            int nidx;
            int cache;
        } index; /* cache: a dict entry position (eval.c; atomic, any thread) */
        struct {
            Node *lo, *hi, *step;
        } slice;
        struct {
            Node *obj;
            const char *name;
            ObjStr *key;
        } member;
        struct FnProto *fn; /* N_FNEXPR, N_FNDEF */
        struct {
            Node *expr;
        } expr; /* N_EXPRSTMT, N_RETURN (may be NULL) */
        struct {
            Node *target;
            Node *value;
        } assign; /* N_ASSIGN, N_AUGASSIGN */
        struct {
            Node **targets;
            int n;
            Node *value;
        } destruct;
        struct {
            Node *cond;
            Node *then;
            Node *els;
        } ifs; /* els: block or nested if; N_COND: then if cond else els */
        struct {
            Node *elt;
            Node *key;
            CompClause *clauses;
            int nclauses;
            int frame;
        } comp; /* key: N_DICTCOMP only; frame: slots of its own frame (module level), else 0 */
        struct {
            Node *cond;
            Node *body;
        } whiles;
        struct {
            Node *var;
            Node **vars;
            int nvars;
            Node *iter;
            Node *body;
            struct LaPlan *plan;
            const char *la_why; /* no plan though it calls a qfn: why not (--deps) */
        } fors;                 /* plan: lookahead (laplan.h), or NULL */
        struct {
            Node *body;
            Node *var;
            Node *handler;
        } tries;
        struct {
            const char *name;
            Node *var;
        } import;
        struct {
            const char **names;
            int n;
        } global;
    } u;
    DepInfo *dep; /* top-level statements only */
};

/* An upvalue of a function: where to find the cell in the enclosing frame. */
typedef struct UpvalDesc {
    bool from_local;
    int index;
} UpvalDesc;

typedef struct FnProto {
    const char *name;
    int line, col;
    bool is_qfn;
    Node *device; /* qfn ... on DEVICE: evaluated at definition */
    int nparams;
    const char **params;
    ObjStr **param_keys;
    Node **defaults;     /* nparams entries, NULL where none */
    int nlocals;         /* frame slots (params first) */
    bool *local_is_cell; /* nlocals entries */
    bool has_cells;      /* some local is captured by a closure */
    const char **local_names;
    int nupvals;
    UpvalDesc *upvals;
    Node *body;    /* N_BLOCK */
    Node *binding; /* N_FNDEF: the resolved name it binds */
    struct ModInfo *mod;
    /* analysis */
    bool pure; /* no print/input/import/global writes, calls only pure fns */
    bool analysed;
    int *global_reads;
    int nglobal_reads; /* globals the body reads (for qfn capture) */
    int *global_calls;
    int nglobal_calls; /* global slots called */
    const char *impure_why;
    int impure_line, impure_col;
} FnProto;

/* A source file after parsing: its text (for carets), its arena, its
 * globals' names (slot i is names[i]). */
typedef struct Source {
    char *name; /* as shown in messages */
    char *path; /* for finding sibling modules, may be NULL */
    char *text;
    size_t len;
    int entry;   /* REPL: the entry's number (1, 2, ...); 0 for files */
    char *label; /* an entry's name in messages ("cell 3"), or NULL: "entry N" */
} Source;

typedef struct ModInfo {
    Source *src;
    /* REPL: the entry being compiled, which resolve's and analysis' messages
       name (NULL: src). Only the compiling (main) thread reads it: src itself
       never changes, as tasks on workers read it for their tracebacks. */
    const Source *msg_src;
    Node *body; /* N_BLOCK of top-level statements */
    int nglobals;
    const char **gnames;
    ObjStr **gkeys;
    bool *gassigned; /* assigned somewhere in the file */
    int *gbuiltin;   /* builtin index to start with, or -1 */
    int capglobals;
    ObjDict *gindex; /* name -> slot (read-only after resolve) */
    struct Arena *arena;
    FnProto **protos;
    int nprotos;               /* every function defined in the file */
    struct ModInfo *next_part; /* REPL: earlier inputs whose arenas we keep */
    bool prepared;             /* the evaluator prepared body and protos (main thread) */
} ModInfo;

/* the source that messages about m's code being compiled name */
static inline const Source *mod_msg_src(const ModInfo *m)
{
    return m->msg_src ? m->msg_src : m->src;
}

/* arena for nodes and strings of one file */
typedef struct Arena Arena;
Arena *arena_new(void);
void *arena_alloc(Arena *a, size_t n);
char *arena_strndup(Arena *a, const char *s, size_t n);
void arena_free(Arena *a);

#endif
