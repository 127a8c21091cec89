/* The pick loop of a non-sticky, migrate="always" PM-First / PAL round, compiled.
 *
 * The definition is the Python path (solvers/placement/policy_round.py PlacementPolicy.place,
 * solvers/placement/free_pool.py FreePool, solvers/placement/policies.py _pick); this kernel returns the same
 * picks, in the same order of decisions. GPU indices must be grouped by machine, machines
 * ascending (pool_index.contiguous), so "by GPU index" orders whole cells (one machine's GPUs of
 * one score level of a class).
 *
 * Per class: levels (equal scores) and cells (runs of the class's score order; cells() makes
 * them once per cluster and scores, the caller keeps them across rounds), free counts per
 * cell (cf) and per level, and two-level bitsets over the cells: BA (cf > 0), BN[v] (cf > 0 and v
 * free GPUs on the machine), BC[v] (cf == v). PAL's packed query keeps, per (class, n), a min
 * segment tree over machines keyed by (n-th lowest free level, free GPUs, machine), refreshed
 * at its next query for the machines touched since (or, where keys only rise: n = P, the
 * artifact's ties, only the minimum's until it is current: tree_lazy()). Every pick is
 * O(P^2 + log G) word operations, a round near-linear in G plus the jobs.
 *
 * Only the C API and the buffer protocol: no numpy headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- two-level bitset ---------------------------------------------------------------------- */
typedef struct {
    uint64_t *w, *s;
    int64_t nw, ns;
} Bits;

static inline void bits_set(Bits *b, int64_t i) {
    int64_t k = i >> 6;
    b->w[k] |= 1ULL << (i & 63);
    b->s[k >> 6] |= 1ULL << (k & 63);
}
static inline void bits_clr(Bits *b, int64_t i) {
    int64_t k = i >> 6;
    b->w[k] &= ~(1ULL << (i & 63));
    if (!b->w[k]) b->s[k >> 6] &= ~(1ULL << (k & 63));
}
/* the summary words of a bitset whose words were written directly (summary zero before) */
static void bits_summarize(Bits *b) {
    for (int64_t k = 0; k < b->nw; k++)
        if (b->w[k]) b->s[k >> 6] |= 1ULL << (k & 63);
}

/* first set bit >= i and < hi, else -1 */
static inline int64_t bits_next(const Bits *b, int64_t i, int64_t hi) {
    if (i >= hi) return -1;
    int64_t k = i >> 6;
    uint64_t m = b->w[k] & (~0ULL << (i & 63));
    if (m) {
        int64_t r = (k << 6) + __builtin_ctzll(m);
        return r < hi ? r : -1;
    }
    int64_t kw = k + 1, lastw = (hi - 1) >> 6;
    if (kw > lastw) return -1;
    int64_t sk = kw >> 6;
    uint64_t sm = b->s[sk] & (~0ULL << (kw & 63));
    int64_t lasts = lastw >> 6;
    while (!sm) {
        if (++sk > lasts) return -1;
        sm = b->s[sk];
    }
    int64_t w = (sk << 6) + __builtin_ctzll(sm);
    if (w > lastw) return -1;
    int64_t r = (w << 6) + __builtin_ctzll(b->w[w]);
    return r < hi ? r : -1;
}

/* ---- per-class state ----------------------------------------------------------------------- */
typedef struct {
    const int32_t *order; /* the score order (the blob's int32 copy: half the memory to read) */
    /* the static layout (cells(): kept by the caller across rounds on the same scores) */
    const int32_t *lev;  /* level of each GPU */
    const double *lval;  /* value of each level */
    int32_t nlev;
    const int32_t *cell_of, *cstart, *cm, *clev, *lcell;
    int32_t ncell;
    const int32_t *mcell, *mcn; /* cells of each machine (<= P) */
    const int32_t *mlev;        /* their levels (mcell's layout) */
    /* the round's state: counts and bitsets in one block (``mem``, laid out by slayout()) */
    char *mem;
    int32_t *cf;
    int64_t *lfree;
    int32_t lo; /* lowest level that may have a free GPU */
    Bits LV;    /* levels with a free GPU */
    Bits BA;
    Bits *BN, *BC; /* [P + 1] */
    int64_t **tree; /* [P + 1] segment trees (lazy) */
    int32_t *tn, ntn; /* the n that have one */
    uint8_t **dirty;
    int32_t **dlist;
    int64_t *dcount;
    /* the takes of the round applied to this state: the first ``synced`` of the pool's log (a
     * machine's free GPUs as they left it: the pool's now plus its takes in the log since) */
    int64_t synced;
    /* the class's template (template()): its all-free state and trees, or NULL */
    char *tmpl;
} Cls;

typedef struct {
    int64_t G, M, P, S; /* S: leaves of the segment trees */
    const int64_t *mi;
    int64_t *mstart; /* machine m: GPUs mstart[m]..mstart[m+1] */
    int64_t *msize;  /* GPUs of machine m (its free GPUs when all are free) */
    int64_t *nf;
    uint8_t *free;
    int64_t n_free;
    int ncls;
    Cls *cls;
    int64_t *scratch, *scratch2, *lowc;
    int art; /* PAL artifact: packed ties by the artifact's node order (FreePool._within_artifact) */
    /* the GPUs taken since all were free, in order: those taken when the round began, then the
     * round's (a class's state catches up when it is next asked: cls_sync()), and its scratch:
     * old free counts of touched cells (-1: untouched), the touched cells and machines, a flag
     * per machine */
    int64_t *log, nlog;
    int32_t *cold, *tcell, *tmach, *mcnt;
} Pool;

#define KEY_INF INT64_MAX

/* offsets (bytes) of the static layout of one class in the buffer cells() makes: an int32
 * header (levels L, cells C), then each array at a place fixed by (G, M, P) */
typedef struct {
    size_t lval, lev, cell_of, cstart, cm, clev, lcell, mcell, mcn, mlev, order, size;
} Layout;

static Layout layout_of(int64_t G, int64_t M, int64_t P) {
    Layout o;
    size_t at = 8;
    o.lval = at, at += sizeof(double) * (size_t)(G + 1);
    o.lev = at, at += sizeof(int32_t) * (size_t)(G + 1);
    o.cell_of = at, at += sizeof(int32_t) * (size_t)(G + 1);
    o.cstart = at, at += sizeof(int32_t) * (size_t)(G + 2);
    o.cm = at, at += sizeof(int32_t) * (size_t)(G + 1);
    o.clev = at, at += sizeof(int32_t) * (size_t)(G + 1);
    o.lcell = at, at += sizeof(int32_t) * (size_t)(G + 2);
    o.mcell = at, at += sizeof(int32_t) * (size_t)(M * P + 1);
    o.mcn = at, at += sizeof(int32_t) * (size_t)(M + 1);
    o.mlev = at, at += sizeof(int32_t) * (size_t)(M * P + 1);
    o.order = at, at += sizeof(int32_t) * (size_t)(G + 1);
    o.size = at;
    return o;
}

/* levels (runs of equal scores in the score order) and cells (one machine's GPUs of one level)
 * of a class: depend only on the cluster and the scores */
static void cells_fill(char *buf, const Layout *o, int64_t G, int64_t M, int64_t P,
                       const int64_t *mi, const int64_t *order, const double *srt) {
    double *lval = (double *)(buf + o->lval);
    int32_t *lev = (int32_t *)(buf + o->lev), *cell_of = (int32_t *)(buf + o->cell_of);
    int32_t *cstart = (int32_t *)(buf + o->cstart), *cm = (int32_t *)(buf + o->cm);
    int32_t *clev = (int32_t *)(buf + o->clev), *lcell = (int32_t *)(buf + o->lcell);
    int32_t *mcell = (int32_t *)(buf + o->mcell), *mcn = (int32_t *)(buf + o->mcn);
    int32_t *mlev = (int32_t *)(buf + o->mlev);
    int32_t *ord = (int32_t *)(buf + o->order);
    memset(mcn, 0, sizeof(int32_t) * (size_t)(M + 1));
    for (int64_t p = 0; p < G; p++) ord[p] = (int32_t)order[p];
    int32_t L = 0, C = 0;
    for (int64_t p = 0; p < G; p++) {
        int64_t g = order[p];
        int newlev = p == 0 || srt[p] != srt[p - 1];
        if (newlev) {
            lval[L] = srt[p];
            lcell[L] = C;
            L++;
        }
        if (newlev || mi[g] != mi[order[p - 1]]) {
            cstart[C] = (int32_t)p;
            cm[C] = (int32_t)mi[g];
            clev[C] = L - 1;
            C++;
        }
        lev[g] = L - 1;
        cell_of[g] = C - 1;
    }
    cstart[C] = (int32_t)G;
    lcell[L] = C;
    for (int32_t x = 0; x < C; x++) {
        int32_t m = cm[x];
        if (mcn[m] < P) mlev[m * P + mcn[m]] = clev[x], mcell[m * P + mcn[m]++] = x;
    }
    ((int32_t *)buf)[0] = L;
    ((int32_t *)buf)[1] = C;
}

/* offsets (bytes) of a class's round state in its block: free counts per cell (cf), per level
 * (lfree), then the words of the bitsets LV, BA, BN[1..P], BC[1..P] */
typedef struct {
    size_t cf, lfree, bits, size;
    int64_t nwc, nsc, nwl, nsl;
} SLayout;

static SLayout slayout(int64_t C, int64_t L, int64_t M, int64_t P) {
    SLayout o;
    o.nwc = (C + 63) / 64 + 1, o.nsc = (o.nwc + 63) / 64 + 1; /* bits_init's sizes */
    o.nwl = (L + 63) / 64 + 1, o.nsl = (o.nwl + 63) / 64 + 1;
    size_t at = 0;
    o.cf = at, at += (sizeof(int32_t) * (size_t)(C + 1) + 7) & ~(size_t)7;
    o.lfree = at, at += sizeof(int64_t) * (size_t)(L + 1);
    o.bits = at;
    at += sizeof(uint64_t) * (size_t)(o.nwl + o.nsl + (1 + 2 * P) * (o.nwc + o.nsc));
    o.size = at;
    return o;
}

static void bits_view(Bits *b, uint64_t **at, int64_t nw, int64_t ns) {
    b->nw = nw, b->ns = ns;
    b->w = *at, *at += nw;
    b->s = *at, *at += ns;
}

/* a class's static layout from ``blob`` (cells()) and its state's arrays in a new block (not
 * filled); 0: out of memory */
static int cls_alloc(Pool *pl, Cls *c, const int64_t *order, const char *blob) {
    int64_t G = pl->G, P = pl->P, M = pl->M;
    Layout o = layout_of(G, M, P);
    memset(c, 0, sizeof(*c));
    c->order = (const int32_t *)(blob + o.order);
    c->nlev = ((const int32_t *)blob)[0];
    c->ncell = ((const int32_t *)blob)[1];
    c->lval = (const double *)(blob + o.lval);
    c->lev = (const int32_t *)(blob + o.lev);
    c->cell_of = (const int32_t *)(blob + o.cell_of);
    c->cstart = (const int32_t *)(blob + o.cstart);
    c->cm = (const int32_t *)(blob + o.cm);
    c->clev = (const int32_t *)(blob + o.clev);
    c->lcell = (const int32_t *)(blob + o.lcell);
    c->mcell = (const int32_t *)(blob + o.mcell);
    c->mcn = (const int32_t *)(blob + o.mcn);
    c->mlev = (const int32_t *)(blob + o.mlev);
    SLayout so = slayout(c->ncell, c->nlev, M, P);
    c->BN = calloc((size_t)P + 1, sizeof(Bits));
    c->BC = calloc((size_t)P + 1, sizeof(Bits));
    c->tree = calloc((size_t)P + 1, sizeof(int64_t *));
    c->dirty = calloc((size_t)P + 1, sizeof(uint8_t *));
    c->dlist = calloc((size_t)P + 1, sizeof(int32_t *));
    c->dcount = calloc((size_t)P + 1, sizeof(int64_t));
    c->tn = calloc((size_t)P + 1, sizeof(int32_t));
    c->mem = malloc(so.size);
    if (!c->BN || !c->BC || !c->tree || !c->dirty || !c->dlist || !c->dcount || !c->tn || !c->mem)
        return 0;
    c->cf = (int32_t *)(c->mem + so.cf);
    c->lfree = (int64_t *)(c->mem + so.lfree);
    uint64_t *at = (uint64_t *)(c->mem + so.bits);
    bits_view(&c->LV, &at, so.nwl, so.nsl);
    bits_view(&c->BA, &at, so.nwc, so.nsc);
    for (int64_t v = 1; v <= P; v++) {
        bits_view(&c->BN[v], &at, so.nwc, so.nsc);
        bits_view(&c->BC[v], &at, so.nwc, so.nsc);
    }
    return 1;
}

/* a class's state for the free GPUs ``free`` (NULL: all of them) and free GPUs per machine
 * ``nf``, from scratch */
static void cls_fill(Pool *pl, Cls *c, const uint8_t *free, const int64_t *nf) {
    int64_t P = pl->P, M = pl->M;
    int32_t L = c->nlev, C = c->ncell;
    memset(c->mem, 0, slayout(C, L, M, P).size);
    /* free GPUs per cell (a pass over the GPUs in index order: sequential reads, no branch on
     * a cell's size) and per level */
    if (free) {
        const int32_t *cell_of = c->cell_of;
        int32_t *cf = c->cf;
        for (int64_t g = 0; g < pl->G; g++) cf[cell_of[g]] += free[g];
        for (int32_t l = 0; l < L; l++) {
            int64_t f = 0;
            for (int32_t x = c->lcell[l]; x < c->lcell[l + 1]; x++) f += c->cf[x];
            c->lfree[l] = f;
        }
    } else {
        for (int32_t x = 0; x < C; x++) c->cf[x] = c->cstart[x + 1] - c->cstart[x];
        for (int32_t l = 0; l < L; l++)
            c->lfree[l] = c->cstart[c->lcell[l + 1]] - c->cstart[c->lcell[l]];
    }
    for (int32_t l = 0; l < L; l++)
        if (c->lfree[l]) c->LV.w[l >> 6] |= 1ULL << (l & 63);
    /* the cells' bits word by word (each word's summary bit once, below) */
    for (int32_t x = 0; x < C; x++) {
        int32_t f = c->cf[x];
        if (f > 0) {
            int64_t k = x >> 6;
            uint64_t bit = 1ULL << (x & 63);
            c->BA.w[k] |= bit;
            if (f <= P) c->BC[f].w[k] |= bit;
            int64_t nfm = nf[c->cm[x]];
            if (nfm <= P) c->BN[nfm].w[k] |= bit;
        }
    }
    bits_summarize(&c->LV);
    bits_summarize(&c->BA);
    for (int64_t v = 1; v <= P; v++) {
        bits_summarize(&c->BC[v]);
        bits_summarize(&c->BN[v]);
    }
    c->lo = 0;
}

/* a class's round state over its static layout ``blob`` (cells()), built from the pool's free
 * GPUs; 0: out of memory */
static int cls_init(Pool *pl, Cls *c, const int64_t *order, const char *blob) {
    if (!cls_alloc(pl, c, order, blob)) return 0;
    cls_fill(pl, c, pl->n_free < pl->G ? pl->free : NULL, pl->nf);
    c->synced = pl->nlog;
    return 1;
}

/* A class's template (template()): a header of int64 (whether its all-free state is made, C,
 * L, M, P, S, art, always: use it however many GPUs are taken), a flag per n = 0..P (whether the tree of n is made), then the all-free
 * state (slayout()) and the trees of n = 2..P (2S int64 each) over it, each made when a round
 * first asks for it. Everything in it depends only on the cluster, the scores and ``art``. */
#define TMPL_HEAD 64
typedef struct {
    size_t flags, state, trees, size;
} TLayout;

static TLayout tlayout(int64_t C, int64_t L, int64_t M, int64_t P, int64_t S) {
    TLayout o;
    o.flags = TMPL_HEAD;
    o.state = o.flags + (((size_t)P + 1 + 7) & ~(size_t)7);
    o.trees = o.state + slayout(C, L, M, P).size;
    o.size = o.trees + sizeof(int64_t) * 2 * (size_t)S * (size_t)(P > 1 ? P - 1 : 0);
    return o;
}

/* a class's round state copied from its template ``tm`` (making the template's all-free state
 * first if needed), then brought to the pool's free GPUs by cls_sync() over the pool's whole
 * log (synced = 0): the same state as cls_init()'s, whose bits are functions of the counts;
 * 0: out of memory */
static int cls_init_tmpl(Pool *pl, Cls *c, const int64_t *order, const char *blob, char *tm) {
    if (!cls_alloc(pl, c, order, blob)) return 0;
    int64_t *h = (int64_t *)tm;
    TLayout to = tlayout(c->ncell, c->nlev, pl->M, pl->P, pl->S);
    size_t size = slayout(c->ncell, c->nlev, pl->M, pl->P).size;
    if (!h[0]) { /* the all-free state, once */
        cls_fill(pl, c, NULL, pl->msize);
        memcpy(tm + to.state, c->mem, size);
        h[0] = 1;
    } else {
        memcpy(c->mem, tm + to.state, size);
        c->lo = 0;
    }
    c->tmpl = tm;
    c->synced = 0;
    return 1;
}

static void cls_free(Cls *c, int64_t P) {
    free(c->mem);
    for (int64_t v = 1; v <= P; v++) {
        if (c->tree) free(c->tree[v]);
        if (c->dirty) free(c->dirty[v]);
        if (c->dlist) free(c->dlist[v]);
    }
    free(c->BN); free(c->BC); free(c->tree); free(c->dirty); free(c->dlist); free(c->dcount);
    free(c->tn);
}
/* ---- taking a GPU -------------------------------------------------------------------------- */
/* the pool's counts and the log; each class's state catches up when it is next asked (cls_sync) */
static inline void take(Pool *pl, int64_t g) {
    int64_t m = pl->mi[g];
    pl->free[g] = 0;
    pl->nf[m]--;
    pl->n_free--;
    pl->log[pl->nlog++] = g;
}

/* whether the tree of n is refreshed lazily: its leaf keys only rise as GPUs are taken (the
 * artifact's, where fewer free GPUs at or below the level rank later; n = P's, a whole free
 * machine or none), so a stale leaf is a lower bound and only the minimum's needs checking */
static inline int tree_lazy(const Pool *pl, int64_t n) { return pl->art || n == pl->P; }

/* machine m's leaves stale after a take that left it with fewer than a0 free GPUs: in the trees
 * of n <= a0 (for n > a0 its key was and stays KEY_INF: fewer than n free) */
static inline void mark_dirty(Pool *pl, Cls *c, int64_t m, int64_t a0) {
    for (int32_t i = 0; i < c->ntn; i++) {
        int32_t n = c->tn[i];
        if (n > a0) continue;
        if (!c->dirty[n][m]) {
            c->dirty[n][m] = 1;
            if (!tree_lazy(pl, n)) c->dlist[n][c->dcount[n]++] = (int32_t)m;
        }
    }
}

/* class c's state after taking GPU g from machine m, which had a free GPUs */
static void apply1(Pool *pl, Cls *c, int64_t g, int64_t m, int64_t a) {
    int64_t P = pl->P;
    int32_t x = c->cell_of[g], b = c->cf[x];
    c->cf[x] = b - 1;
    if (--c->lfree[c->lev[g]] == 0) bits_clr(&c->LV, c->lev[g]);
    bits_clr(&c->BC[b], x);
    if (b > 1) bits_set(&c->BC[b - 1], x);
    else bits_clr(&c->BA, x);
    for (int32_t i = 0; i < c->mcn[m]; i++) {
        int32_t y = c->mcell[m * P + i];
        if (c->cf[y] > 0) {
            bits_clr(&c->BN[a], y);
            bits_set(&c->BN[a - 1], y);
        } else if (y == x) {
            bits_clr(&c->BN[a], y);
        }
    }
    mark_dirty(pl, c, m, a);
}

/* class c's state after taking ``t`` GPUs of its cell x (level l), the pool's only takes since c
 * was synced (counted in the pool already): cls_sync()'s result for them, with what they share
 * counted once */
static void take_cell(Pool *pl, Cls *c, int64_t x, int64_t l, int64_t t) {
    int64_t m = c->cm[x], a1 = pl->nf[m], a0 = a1 + t, P = pl->P;
    int32_t b = c->cf[x], f = b - (int32_t)t;
    c->cf[x] = f;
    if ((c->lfree[l] -= t) == 0) bits_clr(&c->LV, l);
    bits_clr(&c->BC[b], x);
    if (f > 0) bits_set(&c->BC[f], x);
    else bits_clr(&c->BA, x);
    for (int32_t k = 0; k < c->mcn[m]; k++) { /* BN[v]: cells with a free GPU on machines with v */
        int32_t y = c->mcell[m * P + k];
        int32_t fy = y == x ? f : c->cf[y];
        if ((y == x ? b : fy) > 0) bits_clr(&c->BN[a0], y);
        if (fy > 0) bits_set(&c->BN[a1], y);
    }
    mark_dirty(pl, c, m, a0);
    c->synced = pl->nlog;
}

/* the end of the run of the log's takes from i on (before hi) on one machine */
static inline int64_t run_end(const Pool *pl, int64_t i, int64_t hi) {
    int64_t m = pl->mi[pl->log[i]], e = i + 1;
    while (e < hi && pl->mi[pl->log[e]] == m) e++;
    return e;
}

/* class c's state after the takes log[i:e) (one machine's, P <= 16), its state having seen
 * those before i, of a batch ending at hi: the machine's bits once, its cells' old counts in a
 * small array (cls_sync()'s result for them) */
static void sync_run(Pool *pl, Cls *c, int64_t i, int64_t e, int64_t hi) {
    int64_t P = pl->P, m = pl->mi[pl->log[i]], later = 0;
    int32_t xs[16], old[16], nx = 0;
    for (int64_t j = e; j < hi; j++) later += pl->mi[pl->log[j]] == m;
    int64_t a1 = pl->nf[m] + later, a0 = a1 + (e - i);
    for (int64_t j = i; j < e; j++) {
        int64_t g = pl->log[j];
        int32_t x = c->cell_of[g], l = c->lev[g], q = 0;
        while (q < nx && xs[q] != x) q++;
        if (q == nx) xs[nx] = x, old[nx++] = c->cf[x];
        c->cf[x]--;
        if (--c->lfree[l] == 0) bits_clr(&c->LV, l);
    }
    for (int32_t k = 0; k < c->mcn[m]; k++) { /* BN[v]: cells with a free GPU on machines with v */
        int32_t y = c->mcell[m * P + k], q = 0;
        while (q < nx && xs[q] != y) q++;
        if ((q < nx ? old[q] : c->cf[y]) > 0) bits_clr(&c->BN[a0], y);
        if (c->cf[y] > 0) bits_set(&c->BN[a1], y);
    }
    mark_dirty(pl, c, m, a0);
    for (int32_t q = 0; q < nx; q++) { /* BC[v]: cells with v free; BA: with any */
        int32_t x = xs[q], f = c->cf[x];
        bits_clr(&c->BC[old[q]], x);
        if (f > 0) bits_set(&c->BC[f], x);
        else bits_clr(&c->BA, x);
    }
}

/* class c's state after the takes of the log it has not seen: one by one when they are few, else
 * the counts first, then each touched machine's and cell's bits once (the same state: the bits
 * are functions of the counts, cf = free GPUs of a cell, of a machine the pool's nf plus its
 * takes not yet seen) */
static void cls_sync(Pool *pl, Cls *c) {
    int64_t lo = c->synced, hi = pl->nlog, P = pl->P;
    if (hi - lo <= 2) {
        for (int64_t i = lo; i < hi; i++) {
            int64_t g = pl->log[i], m = pl->mi[g];
            int64_t later = i + 1 < hi && pl->mi[pl->log[i + 1]] == m;
            apply1(pl, c, g, m, pl->nf[m] + 1 + later);
        }
        c->synced = hi;
        return;
    }
    if (hi - lo <= 32 && P <= 16) { /* a pick's takes: machine by machine, no scratch arrays */
        for (int64_t i = lo, e; i < hi; i = e) sync_run(pl, c, i, e = run_end(pl, i, hi), hi);
        c->synced = hi;
        return;
    }
    int32_t *cold = pl->cold, *tc = pl->tcell, *tm = pl->tmach;
    int32_t *mf = pl->mcnt;
    int64_t nc = 0, nm = 0;
    for (int64_t i = lo; i < hi; i++) {
        int64_t g = pl->log[i], m = pl->mi[g];
        int32_t x = c->cell_of[g], l = c->lev[g];
        if (cold[x] < 0) {
            cold[x] = c->cf[x];
            tc[nc++] = x;
        }
        c->cf[x]--;
        if (--c->lfree[l] == 0) bits_clr(&c->LV, l);
        if (!mf[m]++) tm[nm++] = (int32_t)m;
    }
    for (int64_t i = 0; i < nm; i++) { /* BN[v]: cells with a free GPU on machines with v free */
        int64_t m = tm[i], a1 = pl->nf[m], a0 = a1 + mf[m];
        mf[m] = 0;
        for (int32_t k = 0; k < c->mcn[m]; k++) {
            int32_t y = c->mcell[m * P + k];
            if ((cold[y] >= 0 ? cold[y] : c->cf[y]) > 0) bits_clr(&c->BN[a0], y);
            if (c->cf[y] > 0) bits_set(&c->BN[a1], y);
        }
        mark_dirty(pl, c, m, a0);
    }
    for (int64_t i = 0; i < nc; i++) { /* BC[v]: cells with v free; BA: with any */
        int32_t x = tc[i], b = cold[x], f = c->cf[x];
        cold[x] = -1;
        bits_clr(&c->BC[b], x);
        if (f > 0) bits_set(&c->BC[f], x);
        else bits_clr(&c->BA, x);
    }
    c->synced = hi;
}

/* ---- queries ------------------------------------------------------------------------------- */
/* the level of the n-th lowest free GPU (first_free's last), *below = free GPUs under it; -1 if
 * fewer than n are free */
static int32_t nth_level(Pool *pl, Cls *c, int64_t n, int64_t *below) {
    if (n > pl->n_free || n < 1) return -1;
    int64_t s = 0, l = bits_next(&c->LV, c->lo, c->nlev);
    c->lo = (int32_t)l; /* no releases in a round: the lowest free level only rises */
    while (s + c->lfree[l] < n) {
        s += c->lfree[l];
        l = bits_next(&c->LV, l + 1, c->nlev);
    }
    *below = s;
    return (int32_t)l;
}

/* free GPUs of cell x, ascending, appended to out (at most lim) */
static inline int64_t cell_emit(Pool *pl, Cls *c, int32_t x, int64_t *out, int64_t lim) {
    int64_t k = 0;
    for (int32_t p = c->cstart[x]; p < c->cstart[x + 1] && k < lim; p++) {
        int64_t g = c->order[p];
        if (pl->free[g]) out[k++] = g;
    }
    return k;
}

static int64_t level_emit(Pool *pl, Cls *c, int32_t l, int64_t *out, int64_t lim) {
    int64_t k = 0;
    int32_t hi = c->lcell[l + 1];
    for (int64_t x = bits_next(&c->BA, c->lcell[l], hi); x >= 0 && k < lim;
         x = bits_next(&c->BA, x + 1, hi))
        k += cell_emit(pl, c, (int32_t)x, out + k, lim - k);
    return k;
}

/* FreePool.pm_first: count 0 = free GPUs on the machine, 1 = of the same level there */
static int64_t pm_first(Pool *pl, Cls *c, int64_t n, int count, int64_t *out, int32_t *lstar) {
    int64_t below;
    int32_t l = nth_level(pl, c, n, &below);
    if (l < 0) return -1;
    *lstar = l;
    int64_t k = 0;
    for (int64_t ll = c->lo; ll < l; ll = bits_next(&c->LV, ll + 1, c->nlev))
        k += level_emit(pl, c, (int32_t)ll, out + k, n - k);
    int64_t need = n - k;
    if (c->lfree[l] == need) return k + level_emit(pl, c, l, out + k, need);
    Bits *B = count == 0 ? c->BN : c->BC;
    int64_t P = pl->P, lo = c->lcell[l], hi = c->lcell[l + 1];
    int64_t dmax = n > P ? n : P;
    for (int64_t d = 0; d <= dmax && k < n; d++) {
        int64_t v1 = n - d, v2 = n + d;
        Bits *b1 = (v1 >= 1 && v1 <= P) ? &B[v1] : NULL;
        Bits *b2 = (d > 0 && v2 >= 1 && v2 <= P) ? &B[v2] : NULL;
        if (!b1 && !b2) continue;
        int64_t x1 = b1 ? bits_next(b1, lo, hi) : -1, x2 = b2 ? bits_next(b2, lo, hi) : -1;
        while ((x1 >= 0 || x2 >= 0) && k < n) {
            int64_t x;
            if (x2 < 0 || (x1 >= 0 && x1 < x2)) {
                x = x1;
                x1 = bits_next(b1, x1 + 1, hi);
            } else {
                x = x2;
                x2 = bits_next(b2, x2 + 1, hi);
            }
            k += cell_emit(pl, c, (int32_t)x, out + k, n - k);
        }
    }
    return k;
}

/* free GPUs of machine m with level <= lmax, sorted by (level, index) */
static int64_t machine_sorted(Pool *pl, Cls *c, int64_t m, int32_t lmax, int64_t *out) {
    int64_t k = 0;
    for (int64_t g = pl->mstart[m]; g < pl->mstart[m + 1]; g++) {
        if (!pl->free[g] || c->lev[g] > lmax) continue;
        int64_t j = k++;
        while (j > 0 && c->lev[out[j - 1]] > c->lev[g]) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = g;
    }
    return k;
}

/* (level of the n-th lowest free GPU, then fewest free GPUs, or with pl->art most free GPUs at or
 * below that level, then machine) for free GPUs per cell ``cf`` and per machine ``nf`` */
static inline int64_t key_of(const Pool *pl, const Cls *c, const int32_t *cf, const int64_t *nf,
                             int64_t m, int64_t n) {
    if (nf[m] < n) return KEY_INF;
    /* the machine's cells, one per level, ascend in level (cells are numbered in score order):
     * the n-th lowest free GPU's level l and the free GPUs at or below it (e) from their free
     * counts, as machine_sorted's (level, index) order gives them, without visiting the GPUs */
    int64_t e = 0, P = pl->P;
    int32_t l = -1;
    if (n == P) { /* all P free: the highest cell's level (no count to read) */
        e = P;
        l = c->mlev[m * P + c->mcn[m] - 1];
    } else {
        const int32_t *ys = c->mcell + m * P;
        for (int32_t i = 0; i < c->mcn[m]; i++) {
            e += cf[ys[i]];
            if (e >= n) {
                l = c->mlev[m * P + i];
                break;
            }
        }
    }
    if (l < 0) return KEY_INF; /* (cannot happen: the cells hold the machine's nf[m] >= n) */
    int64_t tie = pl->art ? P - e : nf[m];
    return ((int64_t)l << 40) | (tie << 24) | m;
}

static inline int64_t leaf_key(const Pool *pl, const Cls *c, int64_t m, int64_t n) {
    return key_of(pl, c, c->cf, pl->nf, m, n);
}

/* the segment tree of n over the leaf keys for free GPUs per cell ``cf`` and per machine ``nf``
 * into t (2S int64) */
static void tree_fill(const Pool *pl, const Cls *c, const int32_t *cf, const int64_t *nf,
                      int64_t n, int64_t *t) {
    int64_t S = pl->S;
    for (int64_t i = 0; i < S; i++) t[S + i] = i < pl->M ? key_of(pl, c, cf, nf, i, n) : KEY_INF;
    for (int64_t i = S - 1; i >= 1; i--) t[i] = t[2 * i] < t[2 * i + 1] ? t[2 * i] : t[2 * i + 1];
}

/* class c's tree of n, from its state, or copied from its template (made there first if needed:
 * the all-free state's) with every machine that has a taken GPU marked for a refresh; 0: out of
 * memory */
static int tree_build(Pool *pl, Cls *c, int64_t n) {
    int64_t S = pl->S;
    int64_t *t = malloc(sizeof(int64_t) * 2 * S);
    uint8_t *d = calloc((size_t)pl->M + 1, 1);
    int32_t *dl = malloc(sizeof(int32_t) * (pl->M + 1));
    if (!t || !d || !dl) {
        free(t); free(d); free(dl);
        return 0;
    }
    c->tree[n] = t;
    c->dirty[n] = d;
    c->dlist[n] = dl;
    c->dcount[n] = 0;
    c->tn[c->ntn++] = (int32_t)n;
    /* afresh without a template's all-free state, or when many machines have a GPU taken */
    const int64_t *h = (const int64_t *)c->tmpl;
    int64_t ntouch = 0;
    for (int64_t m = 0; h && h[0] && m < pl->M; m++) ntouch += pl->nf[m] != pl->msize[m];
    if (!h || !h[0] || (ntouch > pl->M / 4 && !h[7])) {
        tree_fill(pl, c, c->cf, pl->nf, n, t);
        return 1;
    }
    TLayout to = tlayout(c->ncell, c->nlev, pl->M, pl->P, pl->S);
    uint8_t *made = (uint8_t *)c->tmpl + to.flags;
    int64_t *tt = (int64_t *)(c->tmpl + to.trees) + 2 * S * (n - 2);
    if (!made[n]) {
        SLayout so = slayout(c->ncell, c->nlev, pl->M, pl->P);
        tree_fill(pl, c, (const int32_t *)(c->tmpl + to.state + so.cf), pl->msize, n, tt);
        made[n] = 1;
    }
    memcpy(t, tt, sizeof(int64_t) * 2 * S);
    int lazy = tree_lazy(pl, n);
    for (int32_t m = 0; m < pl->M; m++) /* the machines with a GPU taken: stale */
        if (pl->nf[m] != pl->msize[m]) {
            d[m] = 1;
            if (!lazy) dl[c->dcount[n]++] = m;
        }
    return 1;
}

/* tree t's leaf of machine m set to key v, and its ancestors' minima up to the first that stays
 * (the nodes above it hold theirs already) */
static inline void tree_set(int64_t *t, int64_t S, int64_t m, int64_t v) {
    int64_t p = S + m;
    t[p] = v;
    for (; p > 1; p >>= 1) {
        int64_t w = t[p ^ 1], u = v < w ? v : w;
        if (t[p >> 1] == u) break;
        t[p >> 1] = v = u;
    }
}

/* PAL's packed query (FreePool.best_within): the machine whose n-th lowest free score is lowest,
 * ties fewest free GPUs then lowest machine; returns the machine (-1: none), *wlev its level */
static int64_t best_within(Pool *pl, Cls *c, int64_t n, int32_t *wlev) {
    if (n > pl->P) return -1;
    if (!c->tree[n] && !tree_build(pl, c, n)) return -2;
    int64_t *t = c->tree[n], S = pl->S;
    uint8_t *dirty = c->dirty[n];
    if (tree_lazy(pl, n)) { /* the least key is exact once its machine is clean */
        for (int64_t m; t[1] != KEY_INF && dirty[m = t[1] & 0xFFFFFF];) {
            dirty[m] = 0;
            tree_set(t, S, m, leaf_key(pl, c, m, n));
        }
    } else {
        const int32_t *dl = c->dlist[n];
        int64_t nd = c->dcount[n];
        for (int64_t i = 0; i < nd; i++) {
            int64_t m = dl[i];
            dirty[m] = 0;
            tree_set(t, S, m, leaf_key(pl, c, m, n));
        }
        c->dcount[n] = 0;
    }
    if (t[1] == KEY_INF) return -1;
    *wlev = (int32_t)(t[1] >> 40);
    return t[1] & 0xFFFFFF;
}

/* the cell of class c on machine m at level l, -1 if none */
static inline int32_t cell_at(Cls *c, int64_t m, int32_t l, int64_t P) {
    for (int32_t i = 0; i < c->mcn[m]; i++) {
        int32_t y = c->mcell[m * P + i];
        if (c->clev[y] == l) return y;
    }
    return -1;
}

/* FreePool.fewest_machines(cls, n, lval[l]) where l is the level of the n-th lowest free GPU */
static int64_t fewest(Pool *pl, Cls *c, int64_t n, int32_t l, int64_t *out) {
    int64_t P = pl->P, lo = c->lcell[l], hi = c->lcell[l + 1];
    int64_t *lowc = pl->lowc, *spec = pl->scratch, ns = 0;
    /* machines with free GPUs below level l (fewer than n GPUs in all) */
    for (int64_t ll = c->lo; ll < l; ll = bits_next(&c->LV, ll + 1, c->nlev)) {
        for (int64_t x = bits_next(&c->BA, c->lcell[ll], c->lcell[ll + 1]); x >= 0;
             x = bits_next(&c->BA, x + 1, c->lcell[ll + 1])) {
            int64_t m = c->cm[x];
            if (lowc[m] == 0) spec[ns++] = m;
            lowc[m] += c->cf[x];
        }
    }
    for (int64_t i = 1; i < ns; i++) { /* ascending machines */
        int64_t v = spec[i], j = i;
        while (j > 0 && spec[j - 1] > v) {
            spec[j] = spec[j - 1];
            j--;
        }
        spec[j] = v;
    }
    int64_t *scnt = spec + ns; /* count of eligible GPUs on each special machine */
    for (int64_t i = 0; i < ns; i++) {
        int32_t y = cell_at(c, spec[i], l, P);
        scnt[i] = lowc[spec[i]] + (y >= 0 ? c->cf[y] : 0);
    }
    int64_t *used = scnt + ns, *ucnt = used + n, nu = 0, cum = 0, kth = -1, kcf = 0;
    for (int64_t v = P; v >= 1 && kth < 0; v--) {
        int64_t si = 0;
        while (si < ns && scnt[si] != v) si++;
        int64_t x = bits_next(&c->BC[v], lo, hi);
        while (x >= 0 && lowc[c->cm[x]]) x = bits_next(&c->BC[v], x + 1, hi);
        while (si < ns || x >= 0) {
            int64_t m;
            if (x < 0 || (si < ns && spec[si] < c->cm[x])) {
                m = spec[si++];
                while (si < ns && scnt[si] != v) si++;
            } else {
                m = c->cm[x];
                x = bits_next(&c->BC[v], x + 1, hi);
                while (x >= 0 && lowc[c->cm[x]]) x = bits_next(&c->BC[v], x + 1, hi);
            }
            if (cum + v >= n) {
                kth = m;
                kcf = v;
                break;
            }
            used[nu] = m;
            ucnt[nu++] = v;
            cum += v;
        }
    }
    int64_t rest = n - cum, last = kth;
    for (int64_t v = rest; v < kcf; v++) {
        int64_t best = -1;
        for (int64_t i = 0; i < ns; i++)
            if (scnt[i] == v) {
                best = spec[i];
                break;
            }
        int64_t x = bits_next(&c->BC[v], lo, hi);
        while (x >= 0 && lowc[c->cm[x]]) x = bits_next(&c->BC[v], x + 1, hi);
        if (x >= 0 && (best < 0 || c->cm[x] < best)) best = c->cm[x];
        if (best >= 0) {
            last = best;
            break;
        }
    }
    for (int64_t i = 0; i < ns; i++) lowc[spec[i]] = 0;
    for (int64_t i = 0; i < nu; i++) { /* (the machines' flags and levels, fetched together) */
        __builtin_prefetch(pl->free + pl->mstart[used[i]]);
        __builtin_prefetch(c->lev + pl->mstart[used[i]]);
    }
    int64_t k = 0;
    for (int64_t i = 0; i < nu; i++) k += machine_sorted(pl, c, used[i], l, out + k);
    int64_t *tmp = pl->scratch2;
    int64_t got = machine_sorted(pl, c, last, l, tmp);
    for (int64_t i = 0; i < rest && i < got; i++) out[k++] = tmp[i];
    return k;
}

/* ---- the round ----------------------------------------------------------------------------- */
typedef struct {
    int mode;     /* 0 PM-First, 1 PAL fewest-machines, 2 PAL artifact */
    int ties;     /* PM-First multi-GPU count: 0 machine, 1 level */
    int singles;  /* single-GPU runs' count: 0 machine, 1 level */
    PyObject *choose; /* choose_cell(w, a, L) for the rare rounding-ambiguous case */
} Rules;

/* choose_cell: round(w, 12) <= round(t, 12); rounding is monotone, so only near-equal values
 * need Python's round (the callable) */
static int choose(const Rules *r, double w, double a, double L) {
    double t = L * a;
    if (w <= t) return 1;
    if (w - t > 2e-12 * (1.0 + (t < 0 ? -t : t))) return 0;
    PyObject *res = PyObject_CallFunction(r->choose, "ddd", w, a, L);
    if (!res) return -1;
    int ok = PyObject_IsTrue(res);
    Py_DECREF(res);
    return ok;
}

/* one job's pick into out; returns its size, 0 = does not fit, -1 = error */
static int64_t pick(Pool *pl, const Rules *r, Cls *c, int64_t n, double L, int64_t *out) {
    int32_t ls = 0, wl = 0;
    int64_t k;
    if (n > pl->n_free) return 0;
    if (r->mode == 0) {
        k = pm_first(pl, c, n, r->ties, out, &ls);
        return k < 0 ? 0 : k;
    }
    int art = r->mode == 2;
    if (n == 1 && !art) {
        k = pm_first(pl, c, 1, 0, out, &ls);
        return k < 0 ? 0 : k;
    }
    if (art) {
        k = pm_first(pl, c, n, 1, out, &ls);
    } else {
        int64_t below;
        ls = nth_level(pl, c, n, &below);
        k = ls < 0 ? -1 : 0;
    }
    if (k < 0) return 0;
    double a = c->lval[ls];
    if (1 < n && n <= pl->P) {
        int64_t m = best_within(pl, c, n, &wl);
        if (m == -2) {
            PyErr_NoMemory();
            return -1;
        }
        if (m >= 0) {
            int ch = choose(r, c->lval[wl], a, L);
            if (ch < 0) return -1;
            if (ch && art) { /* the artifact: the machine's first n GPUs at or below the level */
                int64_t i = 0;
                for (int64_t g = pl->mstart[m]; g < pl->mstart[m + 1] && i < n; g++)
                    if (pl->free[g] && c->lev[g] <= wl) out[i++] = g;
                return n;
            }
            if (ch) {
                int64_t *tmp = pl->scratch2;
                machine_sorted(pl, c, m, INT32_MAX, tmp);
                for (int64_t i = 0; i < n; i++) out[i] = tmp[i];
                return n;
            }
        }
    }
    if (art) return k;
    return fewest(pl, c, n, ls, out);
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the round's picks, job after job: the processing position of each job placed (``pos``), the
 * GPUs placed up to and including it (``ends``) and every job's GPUs, sorted within a job (``flat``) */
typedef struct {
    int64_t *pos, *ends, *flat;
    int64_t np, nf;
} Picks;

static void record(Picks *o, int64_t k, int64_t *g, int64_t n) {
    if (n > 16) qsort(g, (size_t)n, sizeof(int64_t), cmp64);
    else
        for (int64_t i = 1; i < n; i++) {
            int64_t v = g[i], j = i;
            while (j > 0 && g[j - 1] > v) {
                g[j] = g[j - 1];
                j--;
            }
            g[j] = v;
        }
    memcpy(o->flat + o->nf, g, sizeof(int64_t) * (size_t)n);
    o->nf += n;
    o->pos[o->np] = k;
    o->ends[o->np++] = o->nf;
}

static PyObject *S_gpus, *S_cls;

/* the class index of cls, initialising its state on first use (class_data(cls) -> (order,
 * cells) or (order, cells, template or None)) */
typedef struct {
    PyObject *index; /* dict cls -> int */
    PyObject *data;  /* callable */
    Py_buffer *ob, *sb, *tb;
    int cap;
    PyObject *last; /* the class of the last lookup and its index */
    long last_k;
} Classes;

/* whether the template in ``b`` (template()) fits a class of C cells and L levels on the pool */
static int tmpl_fits(const Pool *pl, const Py_buffer *b, int64_t C, int64_t L) {
    const int64_t *h = b->buf;
    return (size_t)b->len == tlayout(C, L, pl->M, pl->P, pl->S).size && !b->readonly &&
           h[1] == C && h[2] == L && h[3] == pl->M && h[4] == pl->P && h[5] == pl->S &&
           h[6] == pl->art;
}

static long class_of(Pool *pl, Classes *cs, PyObject *cls) {
    if (cls == cs->last && cs->last_k >= 0) return cs->last_k; /* runs of one class object */
    PyObject *v = PyDict_GetItemWithError(cs->index, cls);
    if (v) {
        Py_INCREF(cls); /* held, so that its address cannot be reused by another object */
        Py_XSETREF(cs->last, cls);
        cs->last_k = PyLong_AsLong(v);
        return cs->last_k;
    }
    if (PyErr_Occurred()) return -1;
    int k = pl->ncls;
    if (k == cs->cap) {
        int cap = cs->cap * 2 + 4;
        Py_buffer *ob = realloc(cs->ob, sizeof(Py_buffer) * cap);
        if (ob) cs->ob = ob;
        Py_buffer *sb = realloc(cs->sb, sizeof(Py_buffer) * cap);
        if (sb) cs->sb = sb;
        Py_buffer *tb = realloc(cs->tb, sizeof(Py_buffer) * cap);
        if (tb) cs->tb = tb;
        Cls *cl = realloc(pl->cls, sizeof(Cls) * cap);
        if (cl) pl->cls = cl;
        if (!ob || !sb || !tb || !cl) {
            PyErr_NoMemory();
            return -1;
        }
        cs->cap = cap;
    }
    PyObject *t = PyObject_CallFunctionObjArgs(cs->data, cls, NULL);
    if (!t) return -1;
    Py_ssize_t nt = PyTuple_Check(t) ? PyTuple_GET_SIZE(t) : 0;
    if (nt != 2 && nt != 3) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_TypeError,
                        "place: class_data must return (order, cells[, template or None])");
        return -1;
    }
    PyObject *to = nt == 3 ? PyTuple_GET_ITEM(t, 2) : Py_None;
    memset(&cs->tb[k], 0, sizeof(Py_buffer)); /* (no template: obj NULL, released as nothing) */
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(t, 0), &cs->ob[k], PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(t);
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(t, 1), &cs->sb[k], PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&cs->ob[k]);
        Py_DECREF(t);
        return -1;
    }
    if (to != Py_None &&
        PyObject_GetBuffer(to, &cs->tb[k], PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&cs->ob[k]);
        PyBuffer_Release(&cs->sb[k]);
        Py_DECREF(t);
        return -1;
    }
    Py_DECREF(t); /* the buffers keep the arrays alive */
    pl->ncls++;
    memset(&pl->cls[k], 0, sizeof(Cls));
    if (cs->ob[k].len != pl->G * 8 || (size_t)cs->sb[k].len != layout_of(pl->G, pl->M, pl->P).size) {
        PyErr_SetString(PyExc_ValueError,
                        "place: a class order or cell layout has the wrong size (cells() of"
                        " another cluster?)");
        return -1;
    }
    const int32_t *hd = cs->sb[k].buf;
    if (cs->tb[k].obj && !tmpl_fits(pl, &cs->tb[k], hd[1], hd[0])) {
        PyErr_SetString(PyExc_ValueError,
                        "place: a class template does not fit its cells (template() of other"
                        " cells, cluster or tie rule?)");
        return -1;
    }
    /* from the template while few GPUs are taken (catching up on each costs more than a build) */
    const int64_t *th = cs->tb[k].obj ? cs->tb[k].buf : NULL;
    int ok = th && (pl->nlog <= pl->G / 8 || th[7])
                 ? cls_init_tmpl(pl, &pl->cls[k], cs->ob[k].buf, cs->sb[k].buf, cs->tb[k].buf)
                 : cls_init(pl, &pl->cls[k], cs->ob[k].buf, cs->sb[k].buf);
    pl->cls[k].tmpl = cs->tb[k].obj ? cs->tb[k].buf : NULL; /* (its trees, either way) */
    if (!ok) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *iv = PyLong_FromLong(k);
    if (!iv || PyDict_SetItem(cs->index, cls, iv) < 0) {
        Py_XDECREF(iv);
        return -1;
    }
    Py_DECREF(iv);
    return k;
}

static const char template_doc[] =
    "template(cells, M, P, art, always=False) -> bytearray\n\n"
    "An empty template of one class for ``place`` (its state when every GPU is free, and the"
    " segment trees of PAL's packed query over it, made by the first rounds that need them and"
    " then copied by every round): ``cells`` the class's ``cells()``, ``M`` machines, ``P`` the"
    " most GPUs on one, ``art`` whether the rounds use the PAL artifact's packed ties. Depends only"
    " on these: kept by the caller with the cells. ``always``: used however many GPUs are taken"
    " when a class or tree is first asked (else built afresh when many are: faster; the same"
    " state either way, which tests compare).";

static PyObject *template(PyObject *self, PyObject *args) {
    Py_buffer bs;
    Py_ssize_t M, P;
    int art, always = 0;
    if (!PyArg_ParseTuple(args, "y*nnp|p", &bs, &M, &P, &art, &always)) return NULL;
    PyObject *res = NULL;
    if (bs.len < 8 || M < 1 || M >= (1 << 24) || P < 1 || P >= (1 << 16)) {
        PyErr_SetString(PyExc_ValueError, "template: inconsistent arguments");
        goto done;
    }
    int64_t L = ((const int32_t *)bs.buf)[0], C = ((const int32_t *)bs.buf)[1], S = 1;
    while (S < M) S <<= 1;
    TLayout o = tlayout(C, L, M, P, S);
    res = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)o.size);
    if (!res) goto done;
    char *buf = PyByteArray_AS_STRING(res);
    memset(buf, 0, o.flags + (size_t)P + 1); /* nothing made yet */
    int64_t *h = (int64_t *)buf;
    h[1] = C, h[2] = L, h[3] = M, h[4] = P, h[5] = S, h[6] = art, h[7] = always;
done:
    PyBuffer_Release(&bs);
    return res;
}

static const char cells_doc[] =
    "cells(mi, M, P, order, sorted) -> bytes\n\n"
    "The static layout of one class for ``place`` (its score levels and cells, one machine's GPUs"
    " of one level): ``mi`` the machine of each GPU (int64, < M, at most P GPUs per machine),"
    " ``order`` the class's score order (int64, a permutation of the GPUs), ``sorted`` the scores"
    " in that order (float64). Depends only on the cluster and the scores: made once, kept by the"
    " caller for the rounds on them.";

static PyObject *cells(PyObject *self, PyObject *args) {
    Py_buffer bmi, bo, bs;
    Py_ssize_t M, P;
    if (!PyArg_ParseTuple(args, "y*nny*y*", &bmi, &M, &P, &bo, &bs)) return NULL;
    PyObject *res = NULL;
    uint8_t *seen = NULL;
    int64_t G = bmi.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *mi = bmi.buf, *order = bo.buf;
    if (bmi.len != G * 8 || bo.len != G * 8 || bs.len != G * 8 || G < 1 || G >= (1 << 23) ||
        M < 1 || M >= (1 << 24) || P < 1 || P >= (1 << 16)) {
        PyErr_SetString(PyExc_ValueError, "cells: inconsistent arguments");
        goto done;
    }
    seen = calloc((size_t)G, 1);
    if (!seen) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t p = 0; p < G; p++) {
        int64_t g = order[p];
        if (g < 0 || g >= G || seen[g] || mi[g] < 0 || mi[g] >= M) {
            PyErr_SetString(PyExc_ValueError,
                            "cells: order must be a permutation of the GPUs, mi in 0..M-1");
            goto done;
        }
        seen[g] = 1;
    }
    Layout o = layout_of(G, M, P);
    res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)o.size);
    if (res) cells_fill(PyBytes_AS_STRING(res), &o, G, M, P, mi, order, bs.buf);
done:
    free(seen);
    PyBuffer_Release(&bmi);
    PyBuffer_Release(&bo);
    PyBuffer_Release(&bs);
    return res;
}

static const char gather_doc[] =
    "gather(seq, idx) -> tuple\n\n"
    "``tuple(seq[i] for i in idx)`` for a list or tuple ``seq`` and int64 positions ``idx``, in"
    " one pass (a round's job ids in processing order).";

static PyObject *gather(PyObject *self, PyObject *args) {
    PyObject *seq;
    Py_buffer bi;
    if (!PyArg_ParseTuple(args, "Oy*", &seq, &bi)) return NULL;
    PyObject *res = NULL;
    const int64_t *idx = bi.buf;
    Py_ssize_t n = bi.len / (Py_ssize_t)sizeof(int64_t);
    if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
        PyErr_SetString(PyExc_TypeError, "gather: seq must be a list or tuple");
        goto done;
    }
    Py_ssize_t N = PySequence_Fast_GET_SIZE(seq);
    if (bi.len != n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "gather: idx must be int64");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= N) {
            PyErr_SetString(PyExc_IndexError, "gather: a position is out of range");
            goto done;
        }
    res = PyTuple_New(n);
    if (!res) goto done;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = items[idx[i]];
        Py_INCREF(v);
        PyTuple_SET_ITEM(res, i, v);
    }
done:
    PyBuffer_Release(&bi);
    return res;
}

static const char build_doc[] =
    "build(ids, pos, ends, flat, ints, ones) -> dict\n\n"
    "``{ids[pos[i]]: tuple(flat[ends[i - 1]:ends[i]])}`` (``ends[-1]`` = 0) for a tuple ``ids``"
    " and int64 ``pos``, ``ends`` (ascending) and ``flat`` (GPU indices < G), in one pass: a"
    " round's allocation from its arrays (place()), each tuple built from ``ints`` / ``ones``,"
    " the tuples (0, .., G-1) and ((0,), .., (G-1,)).";

static PyObject *build(PyObject *self, PyObject *args) {
    PyObject *ids, *ints, *ones, *res = NULL;
    Py_buffer bp, be, bf;
    if (!PyArg_ParseTuple(args, "O!y*y*y*O!O!", &PyTuple_Type, &ids, &bp, &be, &bf, &PyTuple_Type,
                          &ints, &PyTuple_Type, &ones))
        return NULL;
    const int64_t *pos = bp.buf, *ends = be.buf, *flat = bf.buf;
    Py_ssize_t n = bp.len / 8, nf = bf.len / 8, N = PyTuple_GET_SIZE(ids), G = PyTuple_GET_SIZE(ints);
    int ok = bp.len == n * 8 && be.len == bp.len && bf.len == nf * 8 && PyTuple_GET_SIZE(ones) == G &&
             (n ? ends[n - 1] == nf : nf == 0);
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = pos[i] >= 0 && pos[i] < N && ends[i] > (i ? ends[i - 1] : 0);
    for (Py_ssize_t i = 0; ok && i < nf; i++) ok = flat[i] >= 0 && flat[i] < G;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "build: inconsistent arguments");
        goto done;
    }
    res = _PyDict_NewPresized(n);
    if (!res) goto done;
    int gc_was = PyGC_Disable(); /* thousands of new tuples: no collections while they are made */
    Py_ssize_t a = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t b = ends[i];
        PyObject *t;
        if (b - a == 1) {
            t = PyTuple_GET_ITEM(ones, flat[a]);
            Py_INCREF(t);
        } else {
            t = PyTuple_New(b - a);
            if (!t) break;
            for (Py_ssize_t q = a; q < b; q++) {
                PyObject *v = PyTuple_GET_ITEM(ints, flat[q]);
                Py_INCREF(v);
                PyTuple_SET_ITEM(t, q - a, v);
            }
            PyObject_GC_UnTrack(t); /* ints only: never in a cycle */
        }
        int rc = PyDict_SetItem(res, PyTuple_GET_ITEM(ids, pos[i]), t);
        Py_DECREF(t);
        if (rc < 0) break;
        a = b;
    }
    if (gc_was) PyGC_Enable();
    if (PyErr_Occurred()) Py_CLEAR(res);
done:
    PyBuffer_Release(&bp);
    PyBuffer_Release(&be);
    PyBuffer_Release(&bf);
    return res;
}

static const char flatten_doc[] =
    "flatten(vals) -> (flat, sizes) or None\n\n"
    "For a list ``vals`` of tuples of ints: every tuple's ints one after the other and each"
    " tuple's length (int64 bytearrays), in one pass; None if an entry is not a tuple or holds"
    " anything but an int that int64 holds (the caller's checks then name it).";

static PyObject *flatten(PyObject *self, PyObject *vals) {
    if (!PyList_Check(vals)) {
        PyErr_SetString(PyExc_TypeError, "flatten: vals must be a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(vals), m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(vals, i);
        if (!PyTuple_CheckExact(v)) Py_RETURN_NONE;
        m += PyTuple_GET_SIZE(v);
    }
    PyObject *fb = PyByteArray_FromStringAndSize(NULL, m * (Py_ssize_t)sizeof(int64_t));
    PyObject *sb = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (!fb || !sb) goto fail;
    int64_t *flat = (int64_t *)PyByteArray_AS_STRING(fb), *sizes = (int64_t *)PyByteArray_AS_STRING(sb);
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(vals, i);
        Py_ssize_t len = PyTuple_GET_SIZE(v);
        sizes[i] = (int64_t)len;
        for (Py_ssize_t e = 0; e < len; e++) {
            PyObject *x = PyTuple_GET_ITEM(v, e);
            int overflow = 0;
            long long g;
            if (!PyLong_CheckExact(x)) goto none;
            g = PyLong_AsLongLongAndOverflow(x, &overflow);
            if (overflow) goto none;
            if (g == -1 && PyErr_Occurred()) goto fail;
            flat[k++] = (int64_t)g;
        }
    }
    PyObject *res = PyTuple_Pack(2, fb, sb);
    Py_DECREF(fb);
    Py_DECREF(sb);
    return res;
none:
    Py_DECREF(fb);
    Py_DECREF(sb);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(fb);
    Py_XDECREF(sb);
    return NULL;
}

static const char rekey_doc[] =
    "rekey(d, table) -> (out, idx) or None\n\n"
    "``out = {table[k]: v for k, v in d.items()}`` and ``idx`` the ``table[k]`` in that order"
    " (int64 bytearray), in one pass, for a dict ``d`` and a dict ``table`` of ints (job id ->"
    " index); None if a key is not in ``table`` (or not hashable) or its value is not an int that"
    " int64 holds (the caller's checks then name it).";

static PyObject *rekey(PyObject *self, PyObject *args) {
    PyObject *d, *table;
    if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &d, &PyDict_Type, &table)) return NULL;
    Py_ssize_t n = PyDict_GET_SIZE(d), pos = 0, i = 0;
    PyObject *out = PyDict_New();
    PyObject *ib = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *k, *v;
    if (!out || !ib) goto fail;
    int64_t *idx = (int64_t *)PyByteArray_AS_STRING(ib);
    while (PyDict_Next(d, &pos, &k, &v)) {
        PyObject *j = PyDict_GetItemWithError(table, k); /* borrowed */
        if (!j) {
            PyErr_Clear(); /* missing or unhashable: the caller names it */
            goto none;
        }
        int overflow = 0;
        if (!PyLong_CheckExact(j)) goto none;
        long long x = PyLong_AsLongLongAndOverflow(j, &overflow);
        if (overflow) goto none;
        if (x == -1 && PyErr_Occurred()) goto fail;
        if (i >= n) goto none;
        idx[i++] = (int64_t)x;
        if (PyDict_SetItem(out, j, v) < 0) goto fail;
    }
    if (i != n || PyDict_GET_SIZE(out) != n) goto none;
    PyObject *res = PyTuple_Pack(2, out, ib);
    Py_DECREF(out);
    Py_DECREF(ib);
    return res;
none:
    Py_DECREF(out);
    Py_DECREF(ib);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(out);
    Py_XDECREF(ib);
    return NULL;
}

static const char same_bytes_doc[] =
    "same_bytes(a, b) -> bool or None\n\n"
    "Whether two buffers hold the same bytes, element by element: C-contiguous ones by memcmp, 1-D"
    " strided ones (a column of a table) item by item; None for other shapes. A kept copy of"
    " scores against the scores of a new round, without an array of comparisons.";

static PyObject *same_bytes(PyObject *self, PyObject *args) {
    PyObject *oa, *ob, *res = NULL;
    if (!PyArg_ParseTuple(args, "OO", &oa, &ob)) return NULL;
    Py_buffer ba, bb;
    if (PyObject_GetBuffer(oa, &ba, PyBUF_STRIDED_RO) < 0) return NULL;
    if (PyObject_GetBuffer(ob, &bb, PyBUF_STRIDED_RO) < 0) {
        PyBuffer_Release(&ba);
        return NULL;
    }
    if (PyBuffer_IsContiguous(&ba, 'C') && PyBuffer_IsContiguous(&bb, 'C')) {
        res = PyBool_FromLong(ba.len == bb.len && memcmp(ba.buf, bb.buf, (size_t)ba.len) == 0);
    } else if (ba.ndim == 1 && bb.ndim == 1 && ba.itemsize == bb.itemsize) {
        int same = ba.shape[0] == bb.shape[0];
        const char *pa = ba.buf, *pb = bb.buf;
        Py_ssize_t sa = ba.strides[0], sb = bb.strides[0], w = ba.itemsize, n = ba.shape[0];
        if (w == 8) /* (the common case: blocks of 64 items without a branch, then a check) */
            for (Py_ssize_t i = 0; same && i < n;) {
                uint64_t d = 0;
                for (Py_ssize_t e = i + 64 < n ? i + 64 : n; i < e; i++, pa += sa, pb += sb) {
                    uint64_t x, y;
                    memcpy(&x, pa, 8), memcpy(&y, pb, 8), d |= x ^ y;
                }
                same = d == 0;
            }
        else
            for (Py_ssize_t i = 0; same && i < n; i++, pa += sa, pb += sb)
                same = memcmp(pa, pb, (size_t)w) == 0;
        res = PyBool_FromLong(same);
    } else {
        res = Py_None;
        Py_INCREF(res);
    }
    PyBuffer_Release(&ba);
    PyBuffer_Release(&bb);
    return res;
}

static const char differs_doc[] =
    "differs(new, old) -> bytearray\n\n"
    "For dicts ``new`` and ``old``: per item of ``new``, in order, 1 if ``old`` lacks its key or"
    " holds a value ``!=`` to it, else 0, in one pass.";

static PyObject *differs(PyObject *self, PyObject *args) {
    PyObject *nw, *old, *k, *v;
    if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &nw, &PyDict_Type, &old)) return NULL;
    Py_ssize_t n = PyDict_GET_SIZE(nw), pos = 0, i = 0;
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n);
    if (!out) return NULL;
    char *o = PyByteArray_AS_STRING(out);
    while (PyDict_Next(nw, &pos, &k, &v)) {
        if (i >= n) {
            PyErr_SetString(PyExc_RuntimeError, "differs: the dict changed size");
            goto fail;
        }
        PyObject *w = PyDict_GetItemWithError(old, k); /* borrowed */
        int d = 1;
        if (!w) {
            if (PyErr_Occurred()) goto fail;
        } else if (w == v) {
            d = 0;
        } else {
            d = PyObject_RichCompareBool(v, w, Py_NE);
            if (d < 0) goto fail;
        }
        o[i++] = (char)d;
    }
    if (i != n) {
        PyErr_SetString(PyExc_RuntimeError, "differs: the dict changed size");
        goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static const char int_lists_json_doc[] =
    "int_lists_json(heads, flat, sizes) -> str or None\n\n"
    "The JSON object ``{k0:[g,..],k1:[..],..}`` from each entry's head ``heads[i]`` (an ASCII str"
    " ``,<key text>:[``, the first one's comma replaced by the brace) and its ``sizes[i]``"
    " non-negative ints of ``flat`` (int64), in one pass; None if a head is not an ASCII str, a"
    " size or int is negative, or the sizes do not add up to ``flat``.";

static PyObject *int_lists_json(PyObject *self, PyObject *args) {
    PyObject *heads;
    Py_buffer bf, bs;
    if (!PyArg_ParseTuple(args, "O!y*y*", &PyList_Type, &heads, &bf, &bs)) return NULL;
    PyObject *res = NULL;
    const int64_t *flat = bf.buf, *sizes = bs.buf;
    Py_ssize_t n = PyList_GET_SIZE(heads), m = bf.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t total = 2, used = 0;
    if (bs.len != n * (Py_ssize_t)sizeof(int64_t) || bf.len != m * (Py_ssize_t)sizeof(int64_t))
        goto none;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *h = PyList_GET_ITEM(heads, i);
        if (!PyUnicode_CheckExact(h) || !PyUnicode_IS_ASCII(h) || PyUnicode_GET_LENGTH(h) < 1 ||
            sizes[i] < 0)
            goto none;
        total += PyUnicode_GET_LENGTH(h) + (sizes[i] ? sizes[i] : 1); /* commas, ']' */
        used += sizes[i];
    }
    if (used != m) goto none;
    for (Py_ssize_t e = 0; e < m; e++) {
        int64_t g = flat[e];
        if (g < 0) goto none;
        do {
            total++;
            g /= 10;
        } while (g);
    }
    total -= n > 0; /* the first head's comma */
    res = PyUnicode_New(total, 127);
    if (!res) goto done;
    Py_UCS1 *w = PyUnicode_1BYTE_DATA(res), *w0 = w;
    *w++ = '{';
    Py_ssize_t e = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *h = PyList_GET_ITEM(heads, i);
        Py_ssize_t len = PyUnicode_GET_LENGTH(h);
        const Py_UCS1 *hd = PyUnicode_1BYTE_DATA(h);
        if (i == 0) { /* the first head without its comma */
            memcpy(w, hd + 1, (size_t)(len - 1));
            w += len - 1;
        } else {
            memcpy(w, hd, (size_t)len);
            w += len;
        }
        for (int64_t c = 0; c < sizes[i]; c++, e++) {
            char buf[24];
            int nd = 0;
            int64_t g = flat[e];
            do {
                buf[nd++] = (char)('0' + g % 10);
                g /= 10;
            } while (g);
            while (nd) *w++ = (Py_UCS1)buf[--nd];
            *w++ = c + 1 < sizes[i] ? ',' : ']';
        }
        if (!sizes[i]) *w++ = ']';
    }
    *w++ = '}';
    if (w - w0 != total) { /* cannot happen: the lengths were counted above */
        Py_CLEAR(res);
        PyErr_SetString(PyExc_RuntimeError, "int_lists_json: internal error (length)");
    }
    goto done;
none:
    res = Py_None;
    Py_INCREF(res);
done:
    PyBuffer_Release(&bf);
    PyBuffer_Release(&bs);
    return res;
}

static const char scan_doc[] =
    "scan(jobs) -> (gpus, codes, classes)\n\n"
    "Each job's ``gpus`` (int64 bytes; a demand beyond int64 reads as the largest int64) and class"
    " code (int64 bytes: the index of its ``cls`` in ``classes``, the distinct classes in order of"
    " first appearance), read once per job.";

static PyObject *scan(PyObject *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "scan: expected a list or tuple of jobs");
    if (!seq) return NULL;
    Py_ssize_t J = PySequence_Fast_GET_SIZE(seq);
    PyObject *gb = PyBytes_FromStringAndSize(NULL, J * 8), *cb = PyBytes_FromStringAndSize(NULL, J * 8);
    PyObject *index = PyDict_New(), *classes = PyList_New(0), *last = NULL, *res = NULL;
    long long last_k = -1;
    if (!gb || !cb || !index || !classes) goto done;
    int64_t *gv = (int64_t *)PyBytes_AS_STRING(gb), *cv = (int64_t *)PyBytes_AS_STRING(cb);
    for (Py_ssize_t j = 0; j < J; j++) {
        PyObject *job = PySequence_Fast_GET_ITEM(seq, j);
        PyObject *g = PyObject_GetAttr(job, S_gpus);
        if (!g) goto done;
        int over = 0;
        long long n = PyLong_AsLongLongAndOverflow(g, &over);
        Py_DECREF(g);
        if (n == -1 && PyErr_Occurred()) goto done;
        if (over) n = over > 0 ? LLONG_MAX : 0; /* a demand beyond any cluster: a misfit */
        gv[j] = n;
        PyObject *c = PyObject_GetAttr(job, S_cls);
        if (!c) goto done;
        if (c != last) { /* runs of one class object: one lookup */
            PyObject *v = PyDict_GetItemWithError(index, c);
            if (v) {
                last_k = PyLong_AsLongLong(v);
            } else if (PyErr_Occurred()) {
                Py_DECREF(c);
                goto done;
            } else {
                last_k = PyList_GET_SIZE(classes);
                PyObject *iv = PyLong_FromLongLong(last_k);
                if (!iv || PyDict_SetItem(index, c, iv) < 0 || PyList_Append(classes, c) < 0) {
                    Py_XDECREF(iv);
                    Py_DECREF(c);
                    goto done;
                }
                Py_DECREF(iv);
            }
            Py_XSETREF(last, c); /* held: its address cannot be reused while compared */
        } else {
            Py_DECREF(c);
        }
        cv[j] = last_k;
    }
    res = Py_BuildValue("(OON)", gb, cb, PyList_AsTuple(classes));
done:
    Py_XDECREF(last);
    Py_XDECREF(gb);
    Py_XDECREF(cb);
    Py_XDECREF(index);
    Py_XDECREF(classes);
    Py_DECREF(seq);
    return res;
}

/* L_across of a job, as the stock ``PolicyBase.locality(job)`` returns it: the job's own
   ``locality`` when not None, else ``locality(job)`` (the policy's table, which depends on the
   job's model only: asked once per model of the round, kept in ``memo``); asked only where PAL's
   walk needs it */
static PyObject *S_locality, *S_model;

static int job_locality(PyObject *job, PyObject *locality, PyObject *memo, double *L) {
    PyObject *v = PyObject_GetAttr(job, S_locality);
    if (!v) return -1;
    if (v == Py_None) {
        Py_DECREF(v);
        PyObject *m = PyObject_GetAttr(job, S_model);
        if (!m) return -1;
        v = PyDict_GetItemWithError(memo, m); /* borrowed */
        if (v) Py_INCREF(v);
        else if (PyErr_Occurred()) { /* an unhashable model: ask every time */
            PyErr_Clear();
            v = PyObject_CallOneArg(locality, job);
        } else {
            v = PyObject_CallOneArg(locality, job);
            if (v && PyDict_SetItem(memo, m, v) < 0) Py_CLEAR(v);
        }
        Py_DECREF(m);
        if (!v) return -1;
    }
    *L = PyFloat_AsDouble(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
}

/* the jobs' L_across from arrays (JobQueue.localities): each job's own (NaN: none) and its model's
 * index; a model's L asked of ``locality(job)`` for its first job that needs it (kept in lm once
 * known[m]), as job_locality() does without reading the job's fields */
typedef struct {
    const double *own;
    const int64_t *model;
    double *lm;
    uint8_t *known;
    int64_t nm;
} Loc;

static int table_locality(const Loc *lc, int64_t j, PyObject *jobs, PyObject *locality, double *L) {
    double v = lc->own[j];
    if (v == v) {
        *L = v;
        return 0;
    }
    int64_t m = lc->model[j];
    if (!lc->known[m]) { /* (the job itself, jobs[j], read only here) */
        PyObject *r = PyObject_CallOneArg(locality, PySequence_Fast_GET_ITEM(jobs, j));
        if (!r) return -1;
        double x = PyFloat_AsDouble(r);
        Py_DECREF(r);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        lc->lm[m] = x;
        lc->known[m] = 1;
    }
    *L = lc->lm[m];
    return 0;
}

static const char place_doc[] =
    "place(mi, M, P, free, jobs, gpus, codes, perm, classes, ids, start, mode, ties, singles,"
    " backfill, class_data, locality, choose, pos, ends, flat[, loc]) -> (k, stopped, placed)\n\n"
    "Run a non-sticky PM-First / PAL round from position ``start`` of the processing order on:"
    " ``mi`` the machine of each GPU (int64, grouped by machine), ``free`` (uint8, updated),"
    " ``jobs`` (a list or tuple; read only for ``locality`` and ``model``), their ``gpus`` and class"
    " ``codes`` (int64, indices into the tuple ``classes``), ``perm`` (int64: the job at each"
    " position of the processing order; None: the jobs' order), ``ids`` the job ids by position,"
    " ``class_data(cls)`` -> (score order int64, its ``cells``), ``locality(job)`` ->"
    " L_across of a job whose own ``locality`` is None (a function of its ``model``: asked once"
    " per model); the picks go into the int64 arrays ``pos`` (the position of each job placed,"
    " ascending; room for every job), ``ends`` (GPUs placed up to and including it) and ``flat``"
    " (every job's GPUs, sorted within a job; room for G); ``loc`` (optional, None: read from each"
    " job) = (own L_across per job, float64, NaN: none; model index per job, int64; the number of"
    " models). Returns the last position decided,"
    " whether a misfit stopped the round and how many jobs were placed.";

static PyObject *place(PyObject *self, PyObject *args) {
    Py_buffer bmi, bfree, bg, bc, bp = {0};
    Py_ssize_t M, P, start;
    Py_buffer bop, boe, bof;
    PyObject *jobs, *permo, *classes, *ids, *class_data, *locality, *chooser, *loco = Py_None;
    int mode, ties, singles, backfill;
    if (!PyArg_ParseTuple(args, "y*nnw*Oy*y*OO!O!niiipOOOw*w*w*|O", &bmi, &M, &P, &bfree, &jobs,
                          &bg, &bc, &permo, &PyTuple_Type, &classes, &PyTuple_Type, &ids, &start,
                          &mode, &ties, &singles, &backfill, &class_data, &locality, &chooser,
                          &bop, &boe, &bof, &loco))
        return NULL;
    Py_buffer blo = {0}, blm = {0};
    Loc lc = {NULL, NULL, NULL, NULL, 0};
    Picks pk = {bop.buf, boe.buf, bof.buf, 0, 0};
    PyObject *result = NULL;
    long *cmap = NULL; /* class code -> the kernel's class index (-1: not yet met) */
    const int64_t *perm = NULL, *jg = bg.buf, *jc = bc.buf;
    Py_ssize_t NC = PyTuple_GET_SIZE(classes);
    Pool pl;
    memset(&pl, 0, sizeof(pl));
    Classes cs = {PyDict_New(), class_data, NULL, NULL, NULL, 0, NULL, -1};
    PyObject *memo = PyDict_New(); /* model -> L_across (jobs without their own) */
    int64_t *out = NULL;
    Rules r = {mode, ties, singles, chooser};
    int64_t G = bmi.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t J = PyTuple_GET_SIZE(ids);
    if (!cs.index || !memo) goto done;
    if (permo != Py_None) {
        if (PyObject_GetBuffer(permo, &bp, PyBUF_C_CONTIGUOUS) < 0) goto done;
        perm = bp.buf;
    }
    if (loco != Py_None) {
        Py_ssize_t nm;
        if (!PyArg_ParseTuple(loco, "y*y*n", &blo, &blm, &nm)) goto done;
        if (blo.len != J * 8 || blm.len != J * 8 || nm < 0) {
            PyErr_SetString(PyExc_ValueError, "place: inconsistent localities");
            goto done;
        }
        lc.own = blo.buf, lc.model = blm.buf, lc.nm = nm;
        for (Py_ssize_t j = 0; j < J; j++)
            if (lc.model[j] < 0 || lc.model[j] >= nm) {
                PyErr_SetString(PyExc_ValueError, "place: a model index out of range");
                goto done;
            }
        lc.lm = malloc(sizeof(double) * (size_t)(nm + 1));
        lc.known = calloc((size_t)nm + 1, 1);
        if (!lc.lm || !lc.known) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (!PyList_Check(jobs) && !PyTuple_Check(jobs)) {
        PyErr_SetString(PyExc_TypeError, "place: jobs must be a list or tuple");
        goto done;
    }
    if (bfree.len != G || PySequence_Fast_GET_SIZE(jobs) != J || bg.len != J * 8 ||
        bc.len != J * 8 || (perm && bp.len != J * 8) || bop.len < J * 8 || boe.len < J * 8 ||
        bof.len < G * 8 || start < 0 || P < 1 || M < 1 || G >= (1 << 23) || M >= (1 << 24) ||
        P >= (1 << 16)) {
        PyErr_SetString(PyExc_ValueError, "place: inconsistent arguments");
        goto done;
    }
    for (Py_ssize_t j = 0; j < J; j++)
        if (jc[j] < 0 || jc[j] >= NC || (perm && (perm[j] < 0 || perm[j] >= J))) {
            PyErr_SetString(PyExc_ValueError, "place: a class code or position out of range");
            goto done;
        }
    cmap = malloc(sizeof(long) * (NC + 1));
    if (!cmap) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < NC; i++) cmap[i] = -1;
    pl.G = G;
    pl.M = M;
    pl.P = P;
    pl.mi = bmi.buf;
    pl.free = bfree.buf;
    pl.art = mode == 2;
    pl.S = 1;
    while (pl.S < M) pl.S <<= 1;
    pl.mstart = calloc((size_t)M + 2, sizeof(int64_t));
    pl.nf = calloc((size_t)M + 1, sizeof(int64_t));
    pl.lowc = calloc((size_t)M + 1, sizeof(int64_t));
    pl.scratch = malloc(sizeof(int64_t) * (4 * G + 4 * P + 16));
    pl.scratch2 = malloc(sizeof(int64_t) * (P + 16));
    pl.log = malloc(sizeof(int64_t) * (G + 1));
    pl.cold = malloc(sizeof(int32_t) * (G + 1));
    pl.tcell = malloc(sizeof(int32_t) * (G + 1));
    pl.tmach = malloc(sizeof(int32_t) * (M + 1));
    pl.mcnt = calloc((size_t)M + 1, sizeof(int32_t));
    pl.msize = malloc(sizeof(int64_t) * (M + 1));
    out = malloc(sizeof(int64_t) * (G + 1));
    if (!pl.mstart || !pl.nf || !pl.lowc || !pl.scratch || !pl.scratch2 || !pl.log || !pl.cold ||
        !pl.tcell || !pl.tmach || !pl.mcnt || !pl.msize || !out) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t g = 0; g < G; g++) {
        int64_t m = pl.mi[g];
        if (m < 0 || m >= M || (g && m < pl.mi[g - 1])) {
            PyErr_SetString(PyExc_ValueError, "place: GPUs must be grouped by machine");
            goto done;
        }
        pl.mstart[m + 1]++;
        if (pl.free[g]) {
            pl.nf[m]++;
            pl.n_free++;
        } else { /* taken when the round began: the head of the log */
            pl.log[pl.nlog++] = g;
        }
    }
    for (int64_t m = 0; m < M; m++) {
        if (pl.mstart[m + 1] > P) {
            PyErr_SetString(PyExc_ValueError, "place: a machine has more than P GPUs");
            goto done;
        }
        pl.msize[m] = pl.mstart[m + 1];
        pl.mstart[m + 1] += pl.mstart[m];
    }
    memset(pl.cold, 0xff, sizeof(int32_t) * (size_t)(G + 1)); /* -1: untouched */
    int64_t k = start - 1;
    int stopped = 0;
    while (!stopped && k + 1 < J) {
        k++;
        if (pl.n_free == 0) {
            k--;
            break;
        }
        int64_t j = perm ? perm[k] : k, code = jc[j];
        long long n = jg[j];
        long ci = cmap[code];
        if (ci < 0) {
            ci = cmap[code] = class_of(&pl, &cs, PyTuple_GET_ITEM(classes, code));
            if (ci < 0) goto done;
        }
        if (n <= pl.n_free) cls_sync(&pl, &pl.cls[ci]); /* (a job that cannot fit asks nothing) */
        if (n == 1) { /* a run of single-GPU jobs of one class */
            int64_t e = k + 1;
            while (e < J) {
                int64_t je = perm ? perm[e] : e;
                if (jg[je] != 1 || jc[je] != code) break;
                e++;
            }
            if (e < J && lc.own) { /* the next job's locality, read after the run's takes */
                int64_t je = perm ? perm[e] : e;
                __builtin_prefetch(lc.own + je);
                __builtin_prefetch(lc.model + je);
            }
            Cls *c = &pl.cls[ci]; /* after class_of: pl.cls may have moved */
            int64_t run = e - k, got = 0;
            Bits *B = r.singles == 0 ? c->BN : c->BC;
            /* pm_first(c, 1, singles) job after job is the lowest free level l's cells in B[1],
             * then B[2], .. B[P] (BN: by free GPUs on the machine, BC: in the cell), each cell's
             * free GPUs in order: taking from a cell lowers its key (it stays first until empty)
             * and changes the membership of no other cell of level l (a machine has one cell per
             * level). So a level's picks come from its bits in one pass, each cell's takes
             * applied to the class state at once (take_cell). */
            while (got < run && pl.n_free > 0) {
                int64_t l = bits_next(&c->LV, c->lo, c->nlev);
                if (l < 0) {
                    PyErr_SetString(PyExc_RuntimeError, "place: internal error (single pick)");
                    goto done;
                }
                c->lo = (int32_t)l; /* no releases in a round: the lowest free level only rises */
                int64_t lo = c->lcell[l], hi = c->lcell[l + 1];
                for (int64_t v = 1; v <= P && got < run; v++)
                    for (int64_t x = bits_next(&B[v], lo, hi); x >= 0 && got < run;
                         x = bits_next(&B[v], x + 1, hi)) {
                        int64_t t = 0, m = c->cm[x]; /* (take() on the cell's machine) */
                        int32_t p0 = c->cstart[x], p1 = c->cstart[x + 1];
                        int full = c->cf[x] == p1 - p0; /* (then no GPU's flag to read) */
                        for (int32_t p = p0; p < p1 && got < run; p++) {
                            int64_t g = c->order[p];
                            if (!full && !pl.free[g]) continue;
                            pl.free[g] = 0;
                            pl.log[pl.nlog++] = g;
                            pk.pos[pk.np] = k + got;
                            pk.flat[pk.nf++] = g;
                            pk.ends[pk.np++] = pk.nf;
                            got++;
                            t++;
                        }
                        pl.nf[m] -= t;
                        pl.n_free -= t;
                        /* (x leaves B[v], or the run ends: the scan reads no bit this changes) */
                        if (t) take_cell(&pl, c, x, l, t);
                    }
            }
            if (got < run && !backfill) {
                k += got;
                stopped = 1;
                break;
            }
            k += run - 1;
            continue;
        }
        double L = 1.0; /* read by PAL's walk only (1 < n <= P) */
        if (mode != 0 && n > 1 && n <= P &&
            (lc.own ? table_locality(&lc, j, jobs, locality, &L)
                    : job_locality(PySequence_Fast_GET_ITEM(jobs, j), locality, memo, &L)) < 0)
            goto done;
        int64_t got = n < 1 ? 0 : pick(&pl, &r, &pl.cls[ci], (int64_t)n, L, out);
        if (got < 0) goto done;
        if (got == 0) {
            if (backfill) continue;
            stopped = 1;
            break;
        }
        if (got != n) {
            PyErr_SetString(PyExc_RuntimeError, "place: internal error (pick size)");
            goto done;
        }
        for (int64_t i = 0; i < got; i++) take(&pl, out[i]);
        record(&pk, k, out, got);
    }
    result = Py_BuildValue("(LOL)", (long long)k, stopped ? Py_True : Py_False, (long long)pk.np);
done:
    for (int i = 0; i < pl.ncls; i++) {
        cls_free(&pl.cls[i], pl.P);
        PyBuffer_Release(&cs.ob[i]);
        PyBuffer_Release(&cs.sb[i]);
        PyBuffer_Release(&cs.tb[i]);
    }
    Py_XDECREF(cs.index);
    Py_XDECREF(memo);
    Py_XDECREF(cs.last);
    free(cs.ob); free(cs.sb); free(cs.tb); free(pl.cls);
    free(pl.mstart); free(pl.nf); free(pl.lowc); free(pl.scratch); free(pl.scratch2); free(out);
    free(pl.log); free(pl.cold); free(pl.tcell); free(pl.tmach); free(pl.mcnt);
    free(pl.msize);
    free(cmap);
    PyBuffer_Release(&bmi);
    PyBuffer_Release(&bfree);
    PyBuffer_Release(&bg);
    PyBuffer_Release(&bc);
    if (perm) PyBuffer_Release(&bp);
    PyBuffer_Release(&blo);
    PyBuffer_Release(&blm);
    free(lc.lm);
    free(lc.known);
    PyBuffer_Release(&bop);
    PyBuffer_Release(&boe);
    PyBuffer_Release(&bof);
    return result;
}

static PyMethodDef methods[] = {
    {"place", place, METH_VARARGS, place_doc},
    {"scan", scan, METH_O, scan_doc},
    {"cells", cells, METH_VARARGS, cells_doc},
    {"template", template, METH_VARARGS, template_doc},
    {"gather", gather, METH_VARARGS, gather_doc},
    {"build", build, METH_VARARGS, build_doc},
    {"flatten", flatten, METH_O, flatten_doc},
    {"rekey", rekey, METH_VARARGS, rekey_doc},
    {"int_lists_json", int_lists_json, METH_VARARGS, int_lists_json_doc},
    {"differs", differs, METH_VARARGS, differs_doc},
    {"same_bytes", same_bytes, METH_VARARGS, same_bytes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_round_kernel",
    "Compiled pick loop of non-sticky PM-First / PAL rounds (see solvers/placement/round_kernel.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__round_kernel(void) {
    S_gpus = PyUnicode_InternFromString("gpus");
    S_cls = PyUnicode_InternFromString("cls");
    S_locality = PyUnicode_InternFromString("locality");
    S_model = PyUnicode_InternFromString("model");
    if (!S_gpus || !S_cls || !S_locality || !S_model) return NULL;
    return PyModule_Create(&module);
}
