" Vim syntax file
" Language:    qh (hybrid quantum/classical scripting language)
" Filenames:   *.qh
" Maintainer:  the qh project (lang/editors/vim/syntax/qh.vim)

if exists("b:current_syntax")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match

" ---- comments and the shebang line ------------------------------------
syn keyword qhTodo        TODO FIXME XXX NOTE contained
syn match   qhComment     "#.*$" contains=qhTodo,@Spell
syn match   qhShebang     "\%^#!.*$"

" ---- keywords ------------------------------------------------------------
syn keyword qhConditional if elif else
syn keyword qhRepeat      while for
syn keyword qhStatement   return break continue global
syn keyword qhException   try catch
syn keyword qhInclude     import
syn keyword qhOperatorKw  and or not in
syn keyword qhDefine      fn qfn nextgroup=qhFunction skipwhite
syn keyword qhDefine      on
syn keyword qhBoolean     true false
syn keyword qhNil         nil
syn match   qhFunction    "\h\w*" contained
" Python words qh reserves (each is an error that says what to write)
syn keyword qhReserved    lambda def class yield nonlocal del is pass raise assert
syn keyword qhReserved    except finally with async await from as None True False

" ---- builtins (src/builtins.c, src/arrayval.c, src/qrt.c, src/async.c) --
syn keyword qhBuiltin     print fmt str num int type complex len range append pop insert
syn keyword qhBuiltin     keys values items sorted reversed error clock sleep input
syn keyword qhBuiltin     ord chr enumerate zip any all get
syn keyword qhBuiltin     join split replace upper lower strip startswith endswith find
syn keyword qhBuiltin     abs sqrt sin cos tan asin acos atan atan2 exp log log2 log10
syn keyword qhBuiltin     floor ceil round min max sum
syn keyword qhBuiltin     array zeros ones eye full linspace arange randn rand shape reshape
syn keyword qhBuiltin     transpose dot kron mean norm real imag conj eigvalsh tolist
syn keyword qhBuiltin     device adjoint ctrl hamiltonian matrix expval var probs state
syn keyword qhBuiltin     sample counts measure grad ready wait sync
syn keyword qhConstant    pi e inf nan argv

" ---- gates (PennyLane names and their aliases) ------------------------
syn keyword qhGate        Identity I Hadamard H PauliX X PauliY Y PauliZ Z S T SX
syn keyword qhGate        RX RY RZ PhaseShift Rot U3 CNOT CX CY CZ SWAP ISWAP
syn keyword qhGate        CRX CRY CRZ ControlledPhaseShift IsingXX IsingYY IsingZZ
syn keyword qhGate        Toffoli CCX CSWAP MultiRZ QubitUnitary BasisState
syn keyword qhGate        SingleExcitation DoubleExcitation

" ---- strings ----------------------------------------------------------------
syn match   qhEscape      +\\[ntr\\"'0]+ contained
syn match   qhEscape      "\\x\x\x" contained
syn match   qhEscape      "\\u{\x\{1,8}}" contained
syn match   qhEscape      "\\$" contained
syn match   qhEscapeError "\\[^ntr\\"'0xu]" contained
syn region  qhString      start=+"+ skip=+\\\\\|\\"\|\\$+ end=+"+ end=+$+ keepend contains=qhEscape,qhEscapeError,@Spell
syn region  qhString      start=+'+ skip=+\\\\\|\\'\|\\$+ end=+'+ end=+$+ keepend contains=qhEscape,qhEscapeError,@Spell

" ---- numbers: 42 3.14 .5 7. 1e-3 0x1f 1_000_000 2j 0.5j ------------------
syn match   qhNumber      "\<0[xX]_*\x[[:xdigit:]_]*\>"
syn match   qhNumber      "\<\d[0-9_]*\%(\.[0-9_]*\)\=\%([eE][+-]\=\d\+\)\=[jJ]\=\>"
syn match   qhNumber      "\<\d[0-9_]*\.\%([^A-Za-z_.]\|$\)\@="
syn match   qhNumber      "\%(^\|[^A-Za-z0-9_.]\)\@<=\.\d[0-9_]*\%([eE][+-]\=\d\+\)\=[jJ]\=\>"

" ---- operators ----------------------------------------------------------
syn match   qhOperator    "\*\*=\=\|//=\=\|<<=\=\|>>=\=\|[-+*/%@&|^]=\|[-+*/%@&|^~]\|[=!<>]=\|[<>=]"

" ---- links ----------------------------------------------------------------
hi def link qhTodo         Todo
hi def link qhComment      Comment
hi def link qhShebang      PreProc
hi def link qhConditional  Conditional
hi def link qhRepeat       Repeat
hi def link qhStatement    Statement
hi def link qhException    Exception
hi def link qhInclude      Include
hi def link qhOperatorKw   Operator
hi def link qhDefine       Keyword
hi def link qhFunction     Function
hi def link qhReserved     Error
hi def link qhBoolean      Boolean
hi def link qhNil          Constant
hi def link qhBuiltin      Function
hi def link qhConstant     Constant
hi def link qhGate         Type
hi def link qhString       String
hi def link qhEscape       SpecialChar
hi def link qhEscapeError  Error
hi def link qhNumber       Number
hi def link qhOperator     Operator

let b:current_syntax = "qh"

let &cpo = s:cpo_save
unlet s:cpo_save
