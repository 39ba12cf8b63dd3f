/* fl_each(value, path): the table-valued function behind ANY/EVERY and UNNEST (spec 9.3), one row
   per array item or dict pair (`value`, `key`, `idx`); a scalar gives one row with itself; MISSING
   and null give none. The cursor copies the argument's bytes once per outer row (they must
   outlive xFilter) into a buffer it reuses, and keeps the compiled path while it is the same. */
#include "fleece_reader.h"
#include <stdlib.h>

typedef struct {
    sqlite3_vtab base;
    const csqlite_api *api;
    const cfl_host *host;
    /* What the last closed cursor left: SQLite opens a cursor per run of an ANY subquery (once
       per outer row), so its compiled path and buffer are handed to the next cursor. */
    cfl_path *spare_path;
    uint8_t *spare_buffer;
    size_t spare_capacity;
} each_vtab;

enum { ROWS_NONE, ROWS_COLLECTION, ROWS_FLEECE_SCALAR, ROWS_INTEGER, ROWS_REAL, ROWS_TEXT, ROWS_DATA };

typedef struct {
    sqlite3_vtab_cursor base;
    uint8_t *buffer;            /* the argument's bytes (owned) */
    size_t capacity;
    cfl_data data;              /* the Fleece data in `buffer` */
    cfl_path *path;             /* the last path compiled */
    int kind;
    int is_dict;
    cfl_coll coll;
    long scalar;                /* ROWS_FLEECE_SCALAR: the value's offset */
    int64_t integer;            /* ROWS_INTEGER (with its subtype) */
    unsigned int subtype;
    double real;
    size_t text_length;         /* ROWS_TEXT / ROWS_DATA: the bytes in `buffer` */
    long row, count;
    const uint8_t *path_text;   /* the path argument, for the Swift item fallback */
    size_t path_length;
} each_cursor;

static const char each_schema[] = "CREATE TABLE x(\"value\", \"key\", \"idx\", _arg0 HIDDEN, _arg1 HIDDEN)";

static int each_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
    (void)argc; (void)argv; (void)err;
    each_vtab *env = aux;
    int rc = env->api->declare_vtab(db, each_schema);
    if (rc != SQLITE_OK) return rc;
    each_vtab *v = calloc(1, sizeof *v);
    if (!v) return SQLITE_NOMEM;
    v->api = env->api;
    v->host = env->host;
    *out = &v->base;
    return SQLITE_OK;
}

static int each_disconnect(sqlite3_vtab *v) {
    each_vtab *vt = (each_vtab *)v;
    cfl_path_free(vt->spare_path);
    free(vt->spare_buffer);
    free(v);
    return SQLITE_OK;
}

static int each_best_index(sqlite3_vtab *v, sqlite3_index_info *info) {
    (void)v;
    int seen = 0;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int arg = c->iColumn - 3;
        if (arg < 0 || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
        if (!c->usable) return SQLITE_CONSTRAINT;
        info->aConstraintUsage[i].argvIndex = arg + 1;
        info->aConstraintUsage[i].omit = 1;
        seen |= 1 << arg;
    }
    /* Only trailing arguments may be left out (they are then NULL). */
    if (!(seen & 1)) return SQLITE_CONSTRAINT;
    info->idxNum = seen;
    info->estimatedCost = 10;
    info->estimatedRows = 10;
    return SQLITE_OK;
}

static int each_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
    each_vtab *vt = (each_vtab *)v;
    each_cursor *c = calloc(1, sizeof *c);
    if (!c) return SQLITE_NOMEM;
    c->path = vt->spare_path;
    c->buffer = vt->spare_buffer;
    c->capacity = vt->spare_capacity;
    vt->spare_path = NULL;
    vt->spare_buffer = NULL;
    vt->spare_capacity = 0;
    *out = &c->base;
    return SQLITE_OK;
}

static int each_close(sqlite3_vtab_cursor *cur) {
    each_cursor *c = (each_cursor *)cur;
    each_vtab *vt = (each_vtab *)cur->pVtab;
    if (!vt->spare_buffer && !vt->spare_path) {
        vt->spare_path = c->path;
        vt->spare_buffer = c->buffer;
        vt->spare_capacity = c->capacity;
    } else {
        free(c->buffer);
        cfl_path_free(c->path);
    }
    free(c);
    return SQLITE_OK;
}

static int keep_bytes(each_cursor *c, const void *bytes, size_t n) {
    if (n > c->capacity) {
        size_t capacity = n < 256 ? 256 : n + n / 2;
        uint8_t *b = realloc(c->buffer, capacity);
        if (!b) return 0;
        c->buffer = b;
        c->capacity = capacity;
    }
    if (n) memcpy(c->buffer, bytes, n);
    return 1;
}

/* The rows of Fleece value `v` of the data in the buffer. */
static void rows_of(each_cursor *c, long v) {
    if (v < 0) { c->kind = ROWS_NONE; return; }
    uint8_t b0 = c->data.p[v];
    switch (b0 >> 4) {
    case CFL_ARRAY: case CFL_DICT:
        if (!cfl_collection(c->data, v, &c->coll)) { c->kind = ROWS_NONE; return; }
        c->kind = ROWS_COLLECTION;
        c->is_dict = (b0 >> 4) == CFL_DICT;
        c->count = c->coll.count;
        return;
    case CFL_SPECIAL:
        if ((b0 & 0x0C) == 0 || (b0 & 0x0C) == 0x0C) { c->kind = ROWS_NONE; return; }   /* null */
        /* fallthrough */
    default:
        c->kind = ROWS_FLEECE_SCALAR;
        c->scalar = v;
        c->count = 1;
    }
}

static int each_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
    (void)idxNum; (void)idxStr;
    each_cursor *c = (each_cursor *)cur;
    each_vtab *vt = (each_vtab *)cur->pVtab;
    const csqlite_api *api = vt->api;
    c->row = 0;
    c->count = 0;
    c->kind = ROWS_NONE;
    c->path_text = NULL;
    c->path_length = 0;
    if (argc < 1) return SQLITE_OK;
    sqlite3_value *arg = argv[0];
    const unsigned char *path_text = argc > 1 ? api->value_text(argv[1]) : NULL;
    size_t path_length = path_text ? (size_t)api->value_bytes(argv[1]) : 0;
    int type = api->value_type(arg);
    unsigned int subtype = api->value_subtype(arg);
    if (type == SQLITE_BLOB && path_length > 0) {
        /* A property of a body (or of a collection): `fl_value`'s lookup. */
        if (subtype == CFL_SUBTYPE_NULL) return SQLITE_OK;
        if (!c->path || c->path->text_length != path_length || memcmp(c->path->text, path_text, path_length)) {
            cfl_path_free(c->path);
            c->path = cfl_path_compile(vt->host, path_text, path_length);
            if (!c->path) return SQLITE_NOMEM;
        }
        /* A malformed path (the Swift parser rejects it too: MISSING), or the rare one only the
           Swift parser reads (see cfl_path_compile), which is read as MISSING here. */
        if (c->path->unsupported) return SQLITE_OK;
        c->path_text = c->path->text;
        c->path_length = path_length;
    } else if (type == SQLITE_BLOB) {
        if (subtype == CFL_SUBTYPE_DATA) {
            size_t n = (size_t)api->value_bytes(arg);
            if (!keep_bytes(c, api->value_blob(arg), n)) return SQLITE_NOMEM;
            c->kind = ROWS_DATA; c->text_length = n; c->count = 1;
            return SQLITE_OK;
        }
        if (subtype == CFL_SUBTYPE_NULL) return SQLITE_OK;
    } else {
        switch (type) {
        case SQLITE_INTEGER:
            c->kind = ROWS_INTEGER; c->integer = api->value_int64(arg);
            c->subtype = subtype == CFL_SUBTYPE_BOOL ? CFL_SUBTYPE_BOOL : 0;
            if (c->subtype) c->integer = c->integer != 0;
            c->count = 1;
            break;
        case SQLITE_FLOAT:
            c->kind = ROWS_REAL; c->real = api->value_double(arg); c->count = 1;
            break;
        case SQLITE_TEXT: {
            const unsigned char *t = api->value_text(arg);
            size_t n = (size_t)api->value_bytes(arg);
            if (!keep_bytes(c, t, n)) return SQLITE_NOMEM;
            c->kind = ROWS_TEXT; c->text_length = n; c->count = 1;
            break;
        }
        default:
            break;                                      /* MISSING */
        }
        return SQLITE_OK;
    }
    const uint8_t *blob = api->value_blob(arg);
    size_t n = (size_t)api->value_bytes(arg);
    if (!blob || n == 0) return SQLITE_OK;              /* JSON null */
    const uint8_t *body;
    size_t body_length;
    if (!cfl_current_body(blob, n, &body, &body_length)) return SQLITE_OK;
    /* Keep the whole argument (the Swift item fallback decodes it again), find the body in it. */
    if (!keep_bytes(c, blob, n)) return SQLITE_NOMEM;
    c->data.p = c->buffer + (body - blob);
    c->data.n = body_length;
    c->text_length = n;
    long v = cfl_root(c->data);
    if (v >= 0 && c->path_length > 0) v = cfl_path_evaluate(vt->host, c->path, c->data, v);
    rows_of(c, v);
    return SQLITE_OK;
}

static int each_next(sqlite3_vtab_cursor *cur) { ((each_cursor *)cur)->row++; return SQLITE_OK; }

static int each_eof(sqlite3_vtab_cursor *cur) {
    each_cursor *c = (each_cursor *)cur;
    return c->row >= c->count;
}

static int each_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int column) {
    static const char empty[1] = "";
    each_cursor *c = (each_cursor *)cur;
    each_vtab *vt = (each_vtab *)cur->pVtab;
    const csqlite_api *api = vt->api;
    if (column == 2) { api->result_int64(ctx, c->row); return SQLITE_OK; }
    if (column == 1) {
        if (c->kind != ROWS_COLLECTION || !c->is_dict) { api->result_null(ctx); return SQLITE_OK; }
        long width = c->coll.wide ? 4 : 2;
        long k = cfl_resolve(c->data, c->coll.first + 2 * c->row * width, c->coll.wide);
        const uint8_t *s;
        size_t n;
        if (k >= 0 && (c->data.p[k] >> 4) == CFL_SHORT) {
            vt->host->key_string(vt->host->context, ctx, (int)cfl_short_int(c->data, k));
        } else if (k >= 0 && (c->data.p[k] >> 4) == CFL_STRING && cfl_string(c->data, k, &s, &n)) {
            api->result_text(ctx, n ? (const char *)s : empty, (int)n, SQLITE_TRANSIENT);
        } else {
            api->result_null(ctx);
        }
        return SQLITE_OK;
    }
    if (column != 0) { api->result_null(ctx); return SQLITE_OK; }
    switch (c->kind) {
    case ROWS_INTEGER:
        api->result_int64(ctx, c->integer);
        if (c->subtype) api->result_subtype(ctx, c->subtype);
        break;
    case ROWS_REAL:
        api->result_double(ctx, c->real);
        break;
    case ROWS_TEXT:
        api->result_text(ctx, c->text_length ? (const char *)c->buffer : empty, (int)c->text_length, SQLITE_TRANSIENT);
        break;
    case ROWS_DATA:
        api->result_blob(ctx, c->text_length ? (const void *)c->buffer : empty, (int)c->text_length, SQLITE_TRANSIENT);
        api->result_subtype(ctx, CFL_SUBTYPE_DATA);
        break;
    case ROWS_FLEECE_SCALAR:
        if (cfl_set_scalar(api, ctx, c->data, c->scalar) != 1) api->result_null(ctx);
        break;
    case ROWS_COLLECTION: {
        long width = c->coll.wide ? 4 : 2;
        long slot = c->is_dict ? c->coll.first + (2 * c->row + 1) * width : c->coll.first + c->row * width;
        long v = cfl_resolve(c->data, slot, c->coll.wide);
        int done = v >= 0 ? cfl_set_scalar(api, ctx, c->data, v) : -1;
        if (done == 0) {
            /* A collection item: the Swift side re-encodes it stand-alone. */
            vt->host->each_item(vt->host->context, ctx, c->buffer, c->text_length, c->path_text, c->path_length, c->row);
        } else if (done < 0) {
            api->result_null(ctx);
        }
        break;
    }
    default:
        api->result_null(ctx);
    }
    return SQLITE_OK;
}

static int each_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = ((each_cursor *)cur)->row;
    return SQLITE_OK;
}

static const sqlite3_module each_module = {
    .iVersion = 0,
    .xCreate = NULL,            /* eponymous-only: `fl_each(…)` in FROM, never CREATE VIRTUAL TABLE */
    .xConnect = each_connect,
    .xBestIndex = each_best_index,
    .xDisconnect = each_disconnect,
    .xDestroy = each_disconnect,
    .xOpen = each_open,
    .xClose = each_close,
    .xFilter = each_filter,
    .xNext = each_next,
    .xEof = each_eof,
    .xColumn = each_column,
    .xRowid = each_rowid,
};

static void free_env(void *p) {
    each_vtab *env = p;
    env->host->release(env->host->context);
    free((void *)env->host);
    free(env);
}

int cfl_register_each(sqlite3 *db, const csqlite_api *api, const cfl_host *host) {
    /* The module's aux: the library and a copy of the host (an each_vtab used as a plain struct). */
    each_vtab *env = calloc(1, sizeof *env);
    cfl_host *h = malloc(sizeof *h);
    if (!env || !h) { free(env); free(h); return SQLITE_NOMEM; }
    *h = *host;
    env->api = api;
    env->host = h;
    return api->create_module_v2(db, "fl_each", &each_module, env, free_env);
}
