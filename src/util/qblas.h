/* qblas.h — OpenBLAS, loaded at its first use rather than at start-up.
 *
 * Loading libopenblas costs about 3 ms (its relocations and its start-up
 * code, which spawns its thread pool), more than the rest of qh's start-up
 * together; most programs never multiply a matrix. So qh does not link it:
 * the first BLAS or LAPACK call dlopen()s it (once, thread-safe) and calls
 * through a table of its functions.
 *
 * Include this instead of <cblas.h>: the cblas_* names used in qh, and the
 * LAPACK routines numpy.linalg uses, become calls through that table, with
 * cblas.h's own prototypes (the compiler checks every call as before). If
 * the library cannot be loaded, the first call prints why and exits with
 * status 1, as the dynamic linker would have at start-up.
 * Knows nothing of arrays, values or quantum. */
#ifndef QH_QBLAS_H
#define QH_QBLAS_H

#include <cblas.h>
#include <stddef.h>

/* LAPACK (Fortran) symbols; the trailing size_t are the hidden lengths of
 * the character arguments that gfortran-built libraries expect. */
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
             double *work, const int *lwork, int *iwork, const int *liwork, int *info,
             size_t jobz_len, size_t uplo_len);
void zheevd_(const char *jobz, const char *uplo, const int *n, double _Complex *a, const int *lda,
             double *w, double _Complex *work, const int *lwork, double *rwork, const int *lrwork,
             int *iwork, const int *liwork, int *info, size_t jobz_len, size_t uplo_len);

/* numpy.linalg's routines (ar_lapack.c): LU solves and determinants,
 * general eigenproblems, SVD, QR and least squares. */
void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b,
            const int *ldb, int *info);
void zgesv_(const int *n, const int *nrhs, double _Complex *a, const int *lda, int *ipiv,
            double _Complex *b, const int *ldb, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void zgetrf_(const int *m, const int *n, double _Complex *a, const int *lda, int *ipiv, int *info);
void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda,
            double *wr, double *wi, double *vl, const int *ldvl, double *vr, const int *ldvr,
            double *work, const int *lwork, int *info, size_t jobvl_len, size_t jobvr_len);
void zgeev_(const char *jobvl, const char *jobvr, const int *n, double _Complex *a, const int *lda,
            double _Complex *w, double _Complex *vl, const int *ldvl, double _Complex *vr,
            const int *ldvr, double _Complex *work, const int *lwork, double *rwork, int *info,
            size_t jobvl_len, size_t jobvr_len);
void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s,
             double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
             int *iwork, int *info, size_t jobz_len);
void zgesdd_(const char *jobz, const int *m, const int *n, double _Complex *a, const int *lda,
             double *s, double _Complex *u, const int *ldu, double _Complex *vt, const int *ldvt,
             double _Complex *work, const int *lwork, double *rwork, int *iwork, int *info,
             size_t jobz_len);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void zgeqrf_(const int *m, const int *n, double _Complex *a, const int *lda, double _Complex *tau,
             double _Complex *work, const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau,
             double *work, const int *lwork, int *info);
void zungqr_(const int *m, const int *n, const int *k, double _Complex *a, const int *lda,
             const double _Complex *tau, double _Complex *work, const int *lwork, int *info);
void dgelsd_(const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
             const int *ldb, double *s, const double *rcond, int *rank, double *work,
             const int *lwork, int *iwork, int *info);

/* The functions qh calls, with the library's own types. */
typedef struct QBlas {
    __typeof__(cblas_ddot) *ddot;
    __typeof__(cblas_dgemm) *dgemm;
    __typeof__(cblas_dgemv) *dgemv;
    __typeof__(cblas_dnrm2) *dnrm2;
    __typeof__(cblas_dznrm2) *dznrm2;
    __typeof__(cblas_zdotu_sub) *zdotu_sub;
    __typeof__(cblas_zgemm) *zgemm;
    __typeof__(cblas_zgemv) *zgemv;
    __typeof__(dsyevd_) *dsyevd;
    __typeof__(zheevd_) *zheevd;
    __typeof__(dgesv_) *dgesv;
    __typeof__(zgesv_) *zgesv;
    __typeof__(dgetrf_) *dgetrf;
    __typeof__(zgetrf_) *zgetrf;
    __typeof__(dgeev_) *dgeev;
    __typeof__(zgeev_) *zgeev;
    __typeof__(dgesdd_) *dgesdd;
    __typeof__(zgesdd_) *zgesdd;
    __typeof__(dgeqrf_) *dgeqrf;
    __typeof__(zgeqrf_) *zgeqrf;
    __typeof__(dorgqr_) *dorgqr;
    __typeof__(zungqr_) *zungqr;
    __typeof__(dgelsd_) *dgelsd;
    __typeof__(openblas_set_num_threads) *set_num_threads;
    __typeof__(openblas_get_num_threads) *get_num_threads;
} QBlas;

/* The table, the library loaded on the first call (any thread). */
const QBlas *qblas(void);
/* Whether it has been loaded (no loading). */
int qblas_loaded(void);
/* BLAS threads: set now if loaded, else when it loads (the library's
 * start-up would otherwise pick its own count); n < 1 means 1. */
void qblas_set_threads(int n);
/* The library's thread count (loads it). */
int qblas_threads(void);

#define cblas_ddot      (qblas()->ddot)
#define cblas_dgemm     (qblas()->dgemm)
#define cblas_dgemv     (qblas()->dgemv)
#define cblas_dnrm2     (qblas()->dnrm2)
#define cblas_dznrm2    (qblas()->dznrm2)
#define cblas_zdotu_sub (qblas()->zdotu_sub)
#define cblas_zgemm     (qblas()->zgemm)
#define cblas_zgemv     (qblas()->zgemv)
#define dsyevd_         (qblas()->dsyevd)
#define zheevd_         (qblas()->zheevd)
#define dgesv_          (qblas()->dgesv)
#define zgesv_          (qblas()->zgesv)
#define dgetrf_         (qblas()->dgetrf)
#define zgetrf_         (qblas()->zgetrf)
#define dgeev_          (qblas()->dgeev)
#define zgeev_          (qblas()->zgeev)
#define dgesdd_         (qblas()->dgesdd)
#define zgesdd_         (qblas()->zgesdd)
#define dgeqrf_         (qblas()->dgeqrf)
#define zgeqrf_         (qblas()->zgeqrf)
#define dorgqr_         (qblas()->dorgqr)
#define zungqr_         (qblas()->zungqr)
#define dgelsd_         (qblas()->dgelsd)

#endif
