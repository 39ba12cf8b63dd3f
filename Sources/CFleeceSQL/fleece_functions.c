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

static void value_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const cfl_env *env = api->user_data(ctx);
    cfl_data d;
    cfl_path *path;
    int fresh;
    long v = lookup(env, ctx, argv, &d, &path, &fresh);
    int done = 0;
    if (v >= 0) {
        done = cfl_set_scalar(api, ctx, d, v) == 1;
    } else if (v == CFL_NONE && path->text_length > 0) {
        api->result_null(ctx);              /* MISSING */
        done = 1;
    }
    keep_path(env, ctx, path, fresh);
    if (!done) fallback(env, CFL_FN_VALUE, ctx, argc, argv);
}

static void exists_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const cfl_env *env = api->user_data(ctx);
    cfl_data d;
    cfl_path *path;
    int fresh;
    long v = lookup(env, ctx, argv, &d, &path, &fresh);
    if (v != CFL_BAD) {
        api->result_int64(ctx, v >= 0);
        api->result_subtype(ctx, CFL_SUBTYPE_BOOL);
    }
    keep_path(env, ctx, path, fresh);
    if (v == CFL_BAD) fallback(env, CFL_FN_EXISTS, ctx, argc, argv);
}

static void count_impl(const csqlite_api *api, sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    static const char empty[1] = "";
    const cfl_env *env = api->user_data(ctx);
    cfl_data d;
    cfl_path *path;
    int fresh;
    long v = lookup(env, ctx, argv, &d, &path, &fresh);
    int done = 1;
    if (v == CFL_NONE) {
        api->result_null(ctx);
    } else if (v >= 0) {
        uint8_t tag = d.p[v] >> 4;
        cfl_coll c;
        if (tag == CFL_ARRAY || tag == CFL_DICT) {
            if (cfl_collection(d, v, &c)) api->result_int64(ctx, c.count); else done = 0;
        } else {
            api->result_blob(ctx, empty, 0, SQLITE_TRANSIENT);   /* JSON null */
            api->result_subtype(ctx, CFL_SUBTYPE_NULL);
        }
    } else {
        done = 0;
    }
    keep_path(env, ctx, path, fresh);
    if (!done) fallback(env, CFL_FN_COUNT, ctx, argc, argv);
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
    api->result_int64(ctx, api->value_int64(argv[0]) != 0);
    api->result_subtype(ctx, CFL_SUBTYPE_BOOL);
}

#define ENTRY_POINTS(name) \
    static void name##_0(sqlite3_context *c, int n, sqlite3_value **v) { name##_impl(library_api[0], c, n, v); } \
    static void name##_1(sqlite3_context *c, int n, sqlite3_value **v) { name##_impl(library_api[1], c, n, v); }
ENTRY_POINTS(value)
ENTRY_POINTS(exists)
ENTRY_POINTS(count)
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
    CREATE("fl_result", 1, result)
    CREATE("fl_bool", 1, bool)
#undef CREATE
    return cfl_register_each(db, api, host);
}
