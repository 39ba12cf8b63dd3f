#ifndef CFLEECESQL_READER_H
#define CFLEECESQL_READER_H
/*
 * A bounds-checked in-place reader of Fleece data (cbl2-format.md §6). Nothing is validated up
 * front: each read checks that what it touches lies inside the data and every pointer points
 * strictly backwards (so chains end), which is all that keeps a malformed body from crashing a
 * query. A failed check makes the reader return CFL_BAD; the callers then hand the call to the
 * Swift implementation, which validates the document and answers MISSING.
 * Values are byte offsets from the start of the data.
 */
#include "CFleeceSQL.h"
#include <CSQLiteAPI.h>
#include <string.h>

#define CFL_NONE (-1)   /* absent (MISSING) */
#define CFL_BAD  (-2)   /* malformed data */

typedef struct {
    const uint8_t *p;
    size_t n;
} cfl_data;

/* Fleece tags (the high nibble of a value's first byte). */
enum { CFL_SHORT = 0, CFL_INT = 1, CFL_FLOAT = 2, CFL_SPECIAL = 3, CFL_STRING = 4, CFL_BINARY = 5,
       CFL_ARRAY = 6, CFL_DICT = 7 };

static inline uint32_t cfl_be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static inline uint32_t cfl_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The value a slot at `pos` (of width 2 or 4) holds: itself, or the end of its pointer chain.
   §6.3: a narrow pointer with the "external" bit is an old 15-bit pointer; a pointer reached
   through a pointer is wide. */
static inline long cfl_resolve(cfl_data d, long pos, int wide) {
    for (int hops = 0; hops < 8; hops++) {
        if (pos < 0 || (size_t)pos + 2 > d.n) return CFL_BAD;
        if (!(d.p[pos] & 0x80)) return pos;
        long offset;
        if (wide) {
            if ((size_t)pos + 4 > d.n) return CFL_BAD;
            offset = (long)(cfl_be32(d.p + pos) & 0x3FFFFFFF) << 1;
        } else {
            uint32_t raw = cfl_be16(d.p + pos);
            offset = raw & 0x4000 ? (long)(raw & 0x7FFF) << 1 : (long)(raw & 0x3FFF) << 1;
        }
        if (offset <= 0 || offset > pos) return CFL_BAD;
        pos -= offset;
        wide = 1;
    }
    return CFL_BAD;
}

/* The root value (§6.4). */
static inline long cfl_root(cfl_data d) {
    if (d.n < 2 || (d.n & 1)) return CFL_BAD;
    long pos = (long)d.n - 2;
    if (!(d.p[pos] & 0x80)) return d.n == 2 ? 0 : CFL_BAD;
    return cfl_resolve(d, pos, 0);
}

typedef struct {
    long first;     /* offset of the first slot */
    long count;     /* items (array) or pairs (dict) */
    int wide;
} cfl_coll;

/* The header of the array/dict at `at`; 0 if it does not fit in the data. */
static inline int cfl_collection(cfl_data d, long at, cfl_coll *c) {
    const uint8_t *p = d.p;
    long count = (long)(p[at] & 0x07) << 8 | p[at + 1];
    long first = at + 2;
    if (count == 2047) {
        long extra = 0;
        int shift = 0;
        for (;;) {
            if ((size_t)first >= d.n || shift > 35) return 0;
            uint8_t b = p[first++];
            extra |= (long)(b & 0x7F) << shift;
            if (!(b & 0x80)) break;
            shift += 7;
        }
        count += extra;
        if (first & 1) first++;
    }
    c->first = first;
    c->count = count;
    c->wide = (p[at] & 0x08) != 0;
    long slots = count * (c->wide ? 4 : 2) * ((p[at] >> 4) == CFL_DICT ? 2 : 1);
    return (size_t)first <= d.n && (size_t)slots <= d.n - (size_t)first;
}

/* Start and length of the bytes of the string/binary value at `at`; 0 if they overflow. */
static inline int cfl_string(cfl_data d, long at, const uint8_t **start, size_t *length) {
    size_t len = d.p[at] & 0x0F;
    size_t i = (size_t)at + 1;
    if (len == 15) {
        len = 0;
        int shift = 0;
        for (;;) {
            if (i >= d.n || shift > 35) return 0;
            uint8_t b = d.p[i++];
            len |= (size_t)(b & 0x7F) << shift;
            if (!(b & 0x80)) break;
            shift += 7;
        }
    }
    if (i > d.n || len > d.n - i) return 0;
    *start = d.p + i;
    *length = len;
    return 1;
}

static inline int64_t cfl_short_int(cfl_data d, long at) {
    int64_t raw = (int64_t)(d.p[at] & 0x0F) << 8 | d.p[at + 1];
    return raw >= 2048 ? raw - 4096 : raw;
}

/* A number as the Swift `QueryValue` has it: an integer (signed, `*is_int`) or a double (floats
   and unsigned long ints). 0 if it overflows the data. */
static inline int cfl_number(cfl_data d, long at, int *is_int, int64_t *i, double *x) {
    const uint8_t *p = d.p;
    switch (p[at] >> 4) {
    case CFL_SHORT:
        *is_int = 1; *i = cfl_short_int(d, at);
        return 1;
    case CFL_INT: {
        int nbytes = (p[at] & 0x07) + 1;
        if ((size_t)at + 1 + (size_t)nbytes > d.n) return 0;
        uint64_t v = 0;
        for (int k = 0; k < nbytes; k++) v |= (uint64_t)p[at + 1 + k] << (8 * k);
        if (p[at] & 0x08) { *is_int = 0; *x = (double)v; return 1; }
        if (nbytes < 8 && (p[at + nbytes] & 0x80)) v |= ~(uint64_t)0 << (8 * nbytes);
        *is_int = 1; *i = (int64_t)v;
        return 1;
    }
    case CFL_FLOAT:
        *is_int = 0;
        if (p[at] & 0x08) {
            if ((size_t)at + 10 > d.n) return 0;
            uint64_t bits = 0;
            for (int k = 0; k < 8; k++) bits |= (uint64_t)p[at + 2 + k] << (8 * k);
            memcpy(x, &bits, 8);
        } else {
            if ((size_t)at + 6 > d.n) return 0;
            uint32_t bits = 0;
            for (int k = 0; k < 4; k++) bits |= (uint32_t)p[at + 2 + k] << (8 * k);
            float f;
            memcpy(&f, &bits, 4);
            *x = (double)f;
        }
        return 1;
    default:
        return 0;
    }
}

/* A property path compiled once per statement (spec 9.1: `a.b[0].c`, `\` escapes). */
typedef struct {
    int is_index;
    long index;
    int code;            /* shared-key code, -1 if none */
    int known_keys;      /* the table's size when `code` was resolved */
    size_t length;       /* key bytes */
    const uint8_t *key;
} cfl_step;

typedef struct {
    int step_count;
    int unsupported;     /* malformed, or read differently by the Swift parser (cfl_path_compile) */
    size_t text_length;
    uint8_t *text;       /* the path as given (fl_each compares it to reuse the compiled path) */
    cfl_step steps[];
} cfl_path;

cfl_path *cfl_path_compile(const cfl_host *host, const uint8_t *text, size_t length);
void cfl_path_free(void *path);

/* The value at `path` under `root`: CFL_NONE if absent, CFL_BAD if the data is malformed. */
long cfl_path_evaluate(const cfl_host *host, cfl_path *path, cfl_data d, long root);

/* The value for `step`'s key in the dict at `at`. */
long cfl_dict_get(const cfl_host *host, cfl_step *step, cfl_data d, long at);

/* Sets an SQLite result to the scalar at `at` as `QueryValue.setResult` does. Returns 1 if done,
   0 for a collection (the caller falls back), -1 if the data is malformed. */
int cfl_set_scalar(const csqlite_api *api, sqlite3_context *ctx, cfl_data d, long at);

/* The subtypes of spec 9.3 (QueryValue). */
#define CFL_SUBTYPE_DATA 0x66
#define CFL_SUBTYPE_NULL 0x67
#define CFL_SUBTYPE_BOOL 0x68

/* A JSON null result: an empty blob with the null subtype. */
static inline void cfl_result_json_null(const csqlite_api *api, sqlite3_context *ctx) {
    static const char empty[1] = "";
    api->result_blob(ctx, empty, 0, SQLITE_TRANSIENT);
    api->result_subtype(ctx, CFL_SUBTYPE_NULL);
}

/* A JSON boolean result: 0 or 1 with the boolean subtype. */
static inline void cfl_result_bool(const csqlite_api *api, sqlite3_context *ctx, int value) {
    api->result_int64(ctx, value != 0);
    api->result_subtype(ctx, CFL_SUBTYPE_BOOL);
}

#endif
