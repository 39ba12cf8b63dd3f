/* fl_value, fl_nested_value, fl_exists, fl_count, fl_result, fl_bool: the scalar Fleece functions
   (spec 9.3), answering from the bytes in place; see CFleeceSQL.h. */
#include "fleece_reader.h"
#include <stdlib.h>

/* What a registered function's user_data points to. */
typedef struct {
    const csqlite_api *api;
    cfl_host host;
} cfl_env;

/* A C callback gets only SQLite's context, so each library (system SQLite, SQLCipher) has its
   own set of entry points naming its table here (as SQLiteKit's Swift thunks do). */
static const csqlite_api *library_api[2];

static void fallback(const cfl_env *env, int function, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    env->host.fallback(env->host.context, function, ctx, argc, (void **)argv);
}

/* The compiled path of argument 1, kept with the call site while it is a constant. */
static cfl_path *path_argument(const cfl_env *env, sqlite3_context *ctx, sqlite3_value *arg, int *fresh) {
    const csqlite_api *api = env->api;
    cfl_path *path = api->get_auxdata(ctx, 1);
    *fresh = 0;
    if (path) return path;
    const unsigned char *text = api->value_text(arg);
    if (!text) return NULL;
    path = cfl_path_compile(&env->host, text, (size_t)api->value_bytes(arg));
    *fresh = path != NULL;
    return path;
}

/* The value at argument 1's path under argument 0: an offset into `*d`, CFL_NONE when absent,
   CFL_BAD when only the Swift implementation can answer. */
static long lookup(const cfl_env *env, sqlite3_context *ctx, sqlite3_value **argv, cfl_data *d, cfl_path **path,
                   int *fresh) {
    const csqlite_api *api = env->api;
    *path = NULL;
    *fresh = 0;
    if (api->value_type(argv[0]) != SQLITE_BLOB || api->value_subtype(argv[0]) == CFL_SUBTYPE_NULL) return CFL_BAD;
    *path = path_argument(env, ctx, argv[1], fresh);
    if (!*path || (*path)->unsupported) return CFL_BAD;
    const uint8_t *blob = api->value_blob(argv[0]);
    size_t n = (size_t)api->value_bytes(argv[0]);
    if (!blob || !cfl_current_body(blob, n, &d->p, &d->n)) return CFL_BAD;
    long root = cfl_root(*d);
    if (root < 0) return CFL_BAD;
    return cfl_path_evaluate(&env->host, *path, *d, root);
}

/* Keeps a freshly compiled path for the next rows (last: SQLite may free it at once). */
static void keep_path(const cfl_env *env, sqlite3_context *ctx, cfl_path *path, int fresh) {
    if (fresh) env->api->set_auxdata(ctx, 1, path, cfl_path_free);
}

/* One call of a path function (fl_value, fl_exists, fl_count, fl_contains): `v` is the value at
   argument 1's path under argument 0 in `d` (see lookup). */
typedef struct {
    const cfl_env *env;
    cfl_data d;
    cfl_path *path;
    int fresh;
    long v;
} cfl_call;

static inline __attribute__((always_inline)) void begin_call(cfl_call *call, const cfl_env *env, sqlite3_context *ctx,
                                                             sqlite3_value **argv) {
    call->env = env;
    call->v = lookup(env, ctx, argv, &call->d, &call->path, &call->fresh);
}

/* Keeps the path, then hands the call to the Swift implementation of `function` unless `done`. */
static inline __attribute__((always_inline)) void end_call(const cfl_call *call, sqlite3_context *ctx, int done,
                                                           int function, int argc, sqlite3_value **argv) {
    keep_path(call->env, ctx, call->path, call->fresh);
    if (!done) fallback(call->env, function, ctx, argc, argv);
}

static void value_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    cfl_call call;
    begin_call(&call, api->user_data(ctx), ctx, argv);
    int done = 0;
    if (call.v >= 0) {
        done = cfl_set_scalar(api, ctx, call.d, call.v) == 1;
    } else if (call.v == CFL_NONE && call.path->text_length > 0) {
        api->result_null(ctx);              /* MISSING */
        done = 1;
    }
    end_call(&call, ctx, done, CFL_FN_VALUE, argc, argv);
}

static void exists_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    cfl_call call;
    begin_call(&call, api->user_data(ctx), ctx, argv);
    if (call.v != CFL_BAD) cfl_result_bool(api, ctx, call.v >= 0);
    end_call(&call, ctx, call.v != CFL_BAD, CFL_FN_EXISTS, argc, argv);
}

static void count_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    cfl_call call;
    begin_call(&call, api->user_data(ctx), ctx, argv);
    int done = 1;
    if (call.v == CFL_NONE) {
        api->result_null(ctx);
    } else if (call.v >= 0) {
        uint8_t tag = call.d.p[call.v] >> 4;
        cfl_coll c;
        if (tag == CFL_ARRAY || tag == CFL_DICT) {
            if (cfl_collection(call.d, call.v, &c)) api->result_int64(ctx, c.count); else done = 0;
        } else {
            cfl_result_json_null(api, ctx);
        }
    } else {
        done = 0;
    }
    end_call(&call, ctx, done, CFL_FN_COUNT, argc, argv);
}

/* fl_contains(body, path, needle): whether the array at the path has an item equal to the needle
   as `QueryValue.sqlEquals` has it (null equals null, strings and data bytewise, numbers, booleans
   included, as doubles); MISSING if absent, JSON null if not an array. A needle that is a
   collection is the Swift function's. */
static void contains_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const cfl_env *env = api->user_data(ctx);
    enum { NEEDLE_MISSING, NEEDLE_NULL, NEEDLE_NUMBER, NEEDLE_TEXT, NEEDLE_DATA } kind = NEEDLE_MISSING;
    double number = 0;
    const uint8_t *bytes = NULL;
    size_t length = 0;
    sqlite3_value *needle = argv[2];
    switch (api->value_type(needle)) {
    case SQLITE_INTEGER:
        kind = NEEDLE_NUMBER;
        number = api->value_subtype(needle) == CFL_SUBTYPE_BOOL ? (api->value_int64(needle) != 0)
                                                                 : (double)api->value_int64(needle);
        break;
    case SQLITE_FLOAT:
        kind = NEEDLE_NUMBER;
        number = api->value_double(needle);
        break;
    case SQLITE_TEXT:
        kind = NEEDLE_TEXT;
        bytes = api->value_text(needle);
        length = (size_t)api->value_bytes(needle);
        break;
    case SQLITE_BLOB: {
        unsigned int subtype = api->value_subtype(needle);
        length = (size_t)api->value_bytes(needle);
        if (subtype == CFL_SUBTYPE_DATA) {
            kind = NEEDLE_DATA;
            bytes = api->value_blob(needle);
        } else if (length == 0 || subtype == CFL_SUBTYPE_NULL) {
            kind = NEEDLE_NULL;
        } else {
            fallback(env, CFL_FN_CONTAINS, ctx, argc, argv);    /* a Fleece value */
            return;
        }
        break;
    }
    default:
        break;
    }
    cfl_call call;
    begin_call(&call, env, ctx, argv);
    const cfl_data d = call.d;
    int done = 1;
    if (call.v == CFL_NONE) {
        api->result_null(ctx);
    } else if (call.v >= 0 && (d.p[call.v] >> 4) != CFL_ARRAY) {
        cfl_result_json_null(api, ctx);
    } else if (call.v >= 0) {
        cfl_coll c;
        int found = 0;
        if (!cfl_collection(d, call.v, &c)) done = 0;
        for (long i = 0; done && !found && kind != NEEDLE_MISSING && i < c.count; i++) {
            long item = cfl_resolve(d, c.first + i * (c.wide ? 4 : 2), c.wide);
            if (item < 0) { done = 0; break; }
            uint8_t b0 = d.p[item];
            const uint8_t *s;
            size_t n;
            switch (b0 >> 4) {
            case CFL_SPECIAL:
                if ((b0 & 0x0C) == 0 || (b0 & 0x0C) == 0x0C) found = kind == NEEDLE_NULL;
                else found = kind == NEEDLE_NUMBER && number == (b0 == 0x38 ? 1.0 : 0.0);
                break;
            case CFL_SHORT: case CFL_INT: case CFL_FLOAT: {
                int is_int;
                int64_t iv;
                double x;
                if (!cfl_number(d, item, &is_int, &iv, &x)) { done = 0; break; }
                found = kind == NEEDLE_NUMBER && number == (is_int ? (double)iv : x);
                break;
            }
            case CFL_STRING: case CFL_BINARY:
                if (!cfl_string(d, item, &s, &n)) { done = 0; break; }
                if (kind == ((b0 >> 4) == CFL_STRING ? NEEDLE_TEXT : NEEDLE_DATA))
                    found = n == length && (n == 0 || memcmp(s, bytes, n) == 0);
                break;
            default:
                break;                                          /* a collection equals no scalar */
            }
        }
        if (done) cfl_result_bool(api, ctx, found);
    } else {
        done = 0;
    }
    end_call(&call, ctx, done, CFL_FN_CONTAINS, argc, argv);
}

/* fl_result: numbers and strings pass through; the rest (booleans, null, data, collections)
   is the Swift function's. */
static void result_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    switch (api->value_type(argv[0])) {
    case SQLITE_FLOAT: case SQLITE_TEXT:
        api->result_value(ctx, argv[0]);
        return;
    case SQLITE_INTEGER:
        if (api->value_subtype(argv[0]) != CFL_SUBTYPE_BOOL) { api->result_value(ctx, argv[0]); return; }
        break;
    case SQLITE_NULL:
        api->result_null(ctx);
        return;
    }
    fallback(api->user_data(ctx), CFL_FN_RESULT, ctx, argc, argv);
}

static void bool_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (api->value_type(argv[0]) == SQLITE_NULL) { api->result_null(ctx); return; }
    cfl_result_bool(api, ctx, api->value_int64(argv[0]) != 0);
}

#define ENTRY_POINTS(name) \
    static void name##_0(sqlite3_context *c, int n, sqlite3_value **v) { name##_impl(library_api[0], c, n, v); } \
    static void name##_1(sqlite3_context *c, int n, sqlite3_value **v) { name##_impl(library_api[1], c, n, v); }
ENTRY_POINTS(value)
ENTRY_POINTS(exists)
ENTRY_POINTS(count)
ENTRY_POINTS(contains)
ENTRY_POINTS(result)
ENTRY_POINTS(bool)

typedef void (*cfl_sql_function)(sqlite3_context *, int, sqlite3_value **);

static int create(const csqlite_api *api, sqlite3 *db, const cfl_host *host, const char *name, int argc,
                  int flags, cfl_sql_function f) {
    cfl_env *env = malloc(sizeof *env);
    if (!env) return SQLITE_NOMEM;
    env->api = api;
    env->host = *host;
    return api->create_function_v2(db, name, argc, flags, env, f, NULL, NULL, free);
}

int cfl_register_each(sqlite3 *db, const csqlite_api *api, const cfl_host *host);

int cfl_register_functions(void *db_, const void *api_, const cfl_host *host) {
    sqlite3 *db = db_;
    const csqlite_api *api = api_;
    int k = api->is_sqlcipher ? 1 : 0;
    library_api[k] = api;
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_SUBTYPE;
    int rc;
#define CREATE(name, argc, impl) \
    if ((rc = create(api, db, host, name, argc, flags, k ? impl##_1 : impl##_0)) != SQLITE_OK) return rc;
    CREATE("fl_value", 2, value)
    CREATE("fl_nested_value", 2, value)
    CREATE("fl_exists", 2, exists)
    CREATE("fl_count", 2, count)
    CREATE("fl_contains", 3, contains)
    CREATE("fl_result", 1, result)
    CREATE("fl_bool", 1, bool)
#undef CREATE
    return cfl_register_each(db, api, host);
}
