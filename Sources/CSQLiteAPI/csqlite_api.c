#define _GNU_SOURCE
#include "CSQLiteAPI.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The system library: the linked symbols themselves. ---- */

static int system_enable_fts3_tokenizer(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 1, (int *)0);
}

#define FOR_EACH_SHARED_FUNCTION(X) \
    X(open_v2) X(close_v2) X(errmsg) X(errstr) X(extended_errcode) X(extended_result_codes) \
    X(busy_timeout) X(exec) X(free) X(last_insert_rowid) X(changes) X(get_autocommit) X(next_stmt) \
    X(finalize) X(reset) X(clear_bindings) X(step) X(stmt_busy) X(bind_blob) X(bind_double) X(bind_int) \
    X(bind_int64) X(bind_null) X(bind_text) X(bind_parameter_index) X(column_blob) X(column_bytes) \
    X(column_count) X(column_double) X(column_int64) X(column_name) X(column_text) X(column_type) \
    X(create_collation_v2) X(create_function_v2) X(create_module_v2) X(declare_vtab) X(aggregate_context) \
    X(user_data) X(get_auxdata) X(set_auxdata) X(result_blob) X(result_double) X(result_error) \
    X(result_int64) X(result_null) X(result_subtype) X(result_text) X(result_value) X(value_blob) \
    X(value_bytes) X(value_double) X(value_int64) X(value_subtype) X(value_text) X(value_type)

static csqlite_api system_api;
static pthread_once_t system_once = PTHREAD_ONCE_INIT;

static void fill_system_api(void) {
    system_api.is_sqlcipher = 0;
#define SET_SYSTEM(name) system_api.name = sqlite3_##name;
    FOR_EACH_SHARED_FUNCTION(SET_SYSTEM)
#undef SET_SYSTEM
    system_api.prepare_v3 = sqlite3_prepare_v3;
    system_api.system_errno = sqlite3_system_errno;
    system_api.enable_fts3_tokenizer = system_enable_fts3_tokenizer;
}

const csqlite_api *csqlite_system_api(void) {
    pthread_once(&system_once, fill_system_api);
    return &system_api;
}

/* ---- SQLCipher, loaded in a namespace of its own. ---- */

static csqlite_api cipher_api;
static const csqlite_api *cipher_result;
static char cipher_error[512];
/* For reports (cbl doctor): the name dlopen was given, the file it resolved, and why loading failed
   in the loader's own words (cipher_error adds the advice). */
static const char *cipher_name;
static char cipher_path[4096];
static char cipher_cause[512];
static pthread_once_t cipher_once = PTHREAD_ONCE_INIT;

typedef int (*prepare_v2_fn)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
typedef int (*db_config_fn)(sqlite3 *, int, ...);
typedef int (*compileoption_used_fn)(const char *);
static prepare_v2_fn cipher_prepare_v2;
static db_config_fn cipher_db_config;

/* SQLCipher 3 is SQLite 3.15: no prepare_v3. SQLITE_PREPARE_PERSISTENT is only a hint. */
static int cipher_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned int flags,
                             sqlite3_stmt **stmt, const char **tail) {
    (void)flags;
    return cipher_prepare_v2(db, sql, n, stmt, tail);
}

/* SQLCipher builds older than SQLite 3.12 have no sqlite3_system_errno. */
static int no_system_errno(sqlite3 *db) {
    (void)db;
    return 0;
}

static int cipher_enable_fts3_tokenizer(sqlite3 *db) {
    return cipher_db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 1, (int *)0);
}

static void load_cipher_api(void) {
    const char *path = getenv("CBL_SQLCIPHER_LIBRARY");
    if (path == NULL || *path == 0) path = "libsqlcipher.so.0";
    cipher_name = path;
    /* RTLD_LOCAL keeps SQLCipher's sqlite3_* names out of the global scope (the package's own calls
       still reach the system libsqlite3), and RTLD_DEEPBIND makes SQLCipher's calls to its own
       exported functions bind to itself rather than to the system library loaded first.
       dlmopen(LM_ID_NEWLM) isolates more, but loads a second libc whose pthread keys collide with the
       first one's per-thread slots: OpenSSL's thread-local state then breaks (a crash in
       CRYPTO_THREAD_read_lock under the Swift runtime on the first key derivation). It stays available
       with CBL_SQLCIPHER_LOAD=dlmopen for comparison. */
    const char *how = getenv("CBL_SQLCIPHER_LOAD");
    void *lib = (how != NULL && strcmp(how, "dlmopen") == 0)
        ? dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL)
        : dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (lib == NULL) {
        const char *why = dlerror();
        snprintf(cipher_cause, sizeof cipher_cause, "%s", why ? why : path);
        snprintf(cipher_error, sizeof cipher_error,
                 "SQLCipher is not available (%s): install Debian's libsqlcipher0 to open encrypted databases",
                 why ? why : path);
        return;
    }
    int missing = 0;
    const char *missing_name = "";
#define SET_CIPHER(name) \
    *(void **)(&cipher_api.name) = dlsym(lib, "sqlite3_" #name); \
    if (cipher_api.name == NULL) { missing = 1; missing_name = "sqlite3_" #name; }
    FOR_EACH_SHARED_FUNCTION(SET_CIPHER)
#undef SET_CIPHER
    *(void **)(&cipher_prepare_v2) = dlsym(lib, "sqlite3_prepare_v2");
    *(void **)(&cipher_db_config) = dlsym(lib, "sqlite3_db_config");
    compileoption_used_fn used = NULL;
    *(void **)(&used) = dlsym(lib, "sqlite3_compileoption_used");
    if (cipher_prepare_v2 == NULL || cipher_db_config == NULL || used == NULL) {
        missing = 1;
        missing_name = "sqlite3_prepare_v2/db_config/compileoption_used";
    }
    if (missing) {
        snprintf(cipher_error, sizeof cipher_error, "%s is not a usable SQLCipher library: %s is missing", path, missing_name);
        snprintf(cipher_cause, sizeof cipher_cause, "%s", cipher_error);
        return;
    }
    if (!used("SQLITE_HAS_CODEC") && !used("HAS_CODEC")) {
        snprintf(cipher_error, sizeof cipher_error, "%s is a SQLite library without encryption (no SQLITE_HAS_CODEC)", path);
        snprintf(cipher_cause, sizeof cipher_cause, "%s", cipher_error);
        return;
    }
    void *v3 = dlsym(lib, "sqlite3_prepare_v3");
    if (v3 != NULL) {
        *(void **)(&cipher_api.prepare_v3) = v3;
    } else {
        cipher_api.prepare_v3 = cipher_prepare_v3;
    }
    void *system_errno = dlsym(lib, "sqlite3_system_errno");
    if (system_errno != NULL) {
        *(void **)(&cipher_api.system_errno) = system_errno;
    } else {
        cipher_api.system_errno = no_system_errno;
    }
    cipher_api.enable_fts3_tokenizer = cipher_enable_fts3_tokenizer;
    cipher_api.is_sqlcipher = 1;
    Dl_info info;
    if (dladdr(*(void **)(&cipher_api.open_v2), &info) != 0 && info.dli_fname != NULL) {
        snprintf(cipher_path, sizeof cipher_path, "%s", info.dli_fname);
    }
    cipher_result = &cipher_api;
}

const csqlite_api *csqlite_sqlcipher_api(char *error, size_t error_size) {
    pthread_once(&cipher_once, load_cipher_api);
    if (cipher_result == NULL && error != NULL && error_size > 0) {
        strncpy(error, cipher_error, error_size - 1);
        error[error_size - 1] = 0;
    }
    return cipher_result;
}

const char *csqlite_sqlcipher_library_name(void) {
    pthread_once(&cipher_once, load_cipher_api);
    return cipher_result != NULL ? cipher_name : NULL;
}

const char *csqlite_sqlcipher_library_path(void) {
    pthread_once(&cipher_once, load_cipher_api);
    return cipher_result != NULL && cipher_path[0] != 0 ? cipher_path : NULL;
}

const char *csqlite_sqlcipher_load_cause(void) {
    pthread_once(&cipher_once, load_cipher_api);
    return cipher_result != NULL ? "" : cipher_cause;
}
