" Vim filetype detection for qh (lang/editors/vim/ftdetect/qh.vim)
autocmd BufRead,BufNewFile *.qh setfiletype qh
" scripts without the extension: a "#!... qh" first line
autocmd BufRead,BufNewFile * if getline(1) =~# '^#!.*\<qh\>' | setfiletype qh | endif
