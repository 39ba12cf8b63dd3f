#ifndef CSQLITEAPI_H
#define CSQLITEAPI_H
/*
 * One table of the SQLite C functions SQLiteKit calls, so that a connection can run on either of two
 * SQLite libraries in the same process:
 *   - the system libsqlite3 (linked as usual; every unencrypted database), or
 *   - SQLCipher (libsqlcipher.so.0), loaded at run time with dlopen(RTLD_LOCAL | RTLD_DEEPBIND),
 *     because it exports the very same sqlite3_* names and would otherwise bind its internal calls to
 *     the system library's copies (or the other way round); see csqlite_api.c for why not dlmopen.
 * Values created by one library (statements, sqlite3_value, sqlite3_context) must only be handed to
 * functions of the same table: each SQLiteConnection keeps the table it was opened with.
 */
#include <sqlite3.h>
#include <stddef.h>

typedef struct csqlite_api {
    int is_sqlcipher;
    int (* _Nonnull open_v2)(const char * _Nonnull, sqlite3 * _Nullable * _Nonnull, int, const char * _Nullable);
    int (* _Nonnull close_v2)(sqlite3 * _Nullable);
    const char * _Nonnull (* _Nonnull errmsg)(sqlite3 * _Nullable);
    const char * _Nonnull (* _Nonnull errstr)(int);
    int (* _Nonnull extended_errcode)(sqlite3 * _Nullable);
    /* The errno of the last failed system call (ENOSPC behind an SQLITE_IOERR); 0 where the library lacks it. */
    int (* _Nonnull system_errno)(sqlite3 * _Nullable);
    int (* _Nonnull extended_result_codes)(sqlite3 * _Nullable, int);
    int (* _Nonnull busy_timeout)(sqlite3 * _Nullable, int);
    int (* _Nonnull exec)(sqlite3 * _Nullable, const char * _Nonnull, int (* _Nullable)(void * _Nullable, int, char * _Nullable * _Nullable, char * _Nullable * _Nullable), void * _Nullable, char * _Nullable * _Nullable);
    void (* _Nonnull free)(void * _Nullable);
    sqlite3_int64 (* _Nonnull last_insert_rowid)(sqlite3 * _Nullable);
    int (* _Nonnull changes)(sqlite3 * _Nullable);
    int (* _Nonnull get_autocommit)(sqlite3 * _Nullable);
    sqlite3_stmt * _Nullable (* _Nonnull next_stmt)(sqlite3 * _Nullable, sqlite3_stmt * _Nullable);
    /* prepare_v3 where the library has it (SQLite 3.20+); prepare_v2 without the flags otherwise. */
    int (* _Nonnull prepare_v3)(sqlite3 * _Nullable, const char * _Nonnull, int, unsigned int, sqlite3_stmt * _Nullable * _Nonnull, const char * _Nullable * _Nullable);
    int (* _Nonnull finalize)(sqlite3_stmt * _Nullable);
    int (* _Nonnull reset)(sqlite3_stmt * _Nullable);
    int (* _Nonnull clear_bindings)(sqlite3_stmt * _Nullable);
    int (* _Nonnull step)(sqlite3_stmt * _Nullable);
    int (* _Nonnull stmt_busy)(sqlite3_stmt * _Nullable);
    int (* _Nonnull bind_blob)(sqlite3_stmt * _Nullable, int, const void * _Nullable, int, void (* _Nullable)(void * _Nullable));
    int (* _Nonnull bind_double)(sqlite3_stmt * _Nullable, int, double);
    int (* _Nonnull bind_int)(sqlite3_stmt * _Nullable, int, int);
    int (* _Nonnull bind_int64)(sqlite3_stmt * _Nullable, int, sqlite3_int64);
    int (* _Nonnull bind_null)(sqlite3_stmt * _Nullable, int);
    int (* _Nonnull bind_text)(sqlite3_stmt * _Nullable, int, const char * _Nullable, int, void (* _Nullable)(void * _Nullable));
    int (* _Nonnull bind_parameter_index)(sqlite3_stmt * _Nullable, const char * _Nonnull);
    const void * _Nullable (* _Nonnull column_blob)(sqlite3_stmt * _Nullable, int);
    int (* _Nonnull column_bytes)(sqlite3_stmt * _Nullable, int);
    int (* _Nonnull column_count)(sqlite3_stmt * _Nullable);
    double (* _Nonnull column_double)(sqlite3_stmt * _Nullable, int);
    sqlite3_int64 (* _Nonnull column_int64)(sqlite3_stmt * _Nullable, int);
    const char * _Nullable (* _Nonnull column_name)(sqlite3_stmt * _Nullable, int);
    const unsigned char * _Nullable (* _Nonnull column_text)(sqlite3_stmt * _Nullable, int);
    int (* _Nonnull column_type)(sqlite3_stmt * _Nullable, int);
    int (* _Nonnull create_collation_v2)(sqlite3 * _Nullable, const char * _Nonnull, int, void * _Nullable,
        int (* _Nullable)(void * _Nullable, int, const void * _Nullable, int, const void * _Nullable), void (* _Nullable)(void * _Nullable));
    int (* _Nonnull create_function_v2)(sqlite3 * _Nullable, const char * _Nonnull, int, int, void * _Nullable,
        void (* _Nullable)(sqlite3_context * _Nullable, int, sqlite3_value * _Nullable * _Nullable),
        void (* _Nullable)(sqlite3_context * _Nullable, int, sqlite3_value * _Nullable * _Nullable),
        void (* _Nullable)(sqlite3_context * _Nullable), void (* _Nullable)(void * _Nullable));
    int (* _Nonnull create_module_v2)(sqlite3 * _Nullable, const char * _Nonnull, const sqlite3_module * _Nullable, void * _Nullable, void (* _Nullable)(void * _Nullable));
    int (* _Nonnull declare_vtab)(sqlite3 * _Nullable, const char * _Nonnull);
    void * _Nullable (* _Nonnull aggregate_context)(sqlite3_context * _Nullable, int);
    void * _Nullable (* _Nonnull user_data)(sqlite3_context * _Nullable);
    void * _Nullable (* _Nonnull get_auxdata)(sqlite3_context * _Nullable, int);
    void (* _Nonnull set_auxdata)(sqlite3_context * _Nullable, int, void * _Nullable, void (* _Nullable)(void * _Nullable));
    void (* _Nonnull result_blob)(sqlite3_context * _Nullable, const void * _Nullable, int, void (* _Nullable)(void * _Nullable));
    void (* _Nonnull result_double)(sqlite3_context * _Nullable, double);
    void (* _Nonnull result_error)(sqlite3_context * _Nullable, const char * _Nullable, int);
    void (* _Nonnull result_int64)(sqlite3_context * _Nullable, sqlite3_int64);
    void (* _Nonnull result_null)(sqlite3_context * _Nullable);
    void (* _Nonnull result_subtype)(sqlite3_context * _Nullable, unsigned int);
    void (* _Nonnull result_text)(sqlite3_context * _Nullable, const char * _Nullable, int, void (* _Nullable)(void * _Nullable));
    void (* _Nonnull result_value)(sqlite3_context * _Nullable, sqlite3_value * _Nullable);
    const void * _Nullable (* _Nonnull value_blob)(sqlite3_value * _Nullable);
    int (* _Nonnull value_bytes)(sqlite3_value * _Nullable);
    double (* _Nonnull value_double)(sqlite3_value * _Nullable);
    sqlite3_int64 (* _Nonnull value_int64)(sqlite3_value * _Nullable);
    unsigned int (* _Nonnull value_subtype)(sqlite3_value * _Nullable);
    const unsigned char * _Nullable (* _Nonnull value_text)(sqlite3_value * _Nullable);
    int (* _Nonnull value_type)(sqlite3_value * _Nullable);
    /* sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 1, 0): variadic, so wrapped. */
    int (* _Nonnull enable_fts3_tokenizer)(sqlite3 * _Nullable);
} csqlite_api;

/// The system libsqlite3's table.
const csqlite_api * _Nonnull csqlite_system_api(void);

/// SQLCipher's table, loading libsqlcipher.so.0 (symbols kept local) on first use. NULL when it
/// cannot be loaded; then `error` (if not NULL) holds why, NUL-terminated, truncated to `error_size`.
const csqlite_api * _Nullable csqlite_sqlcipher_api(char * _Nullable error, size_t error_size);

/// For reports (`cbl doctor`), each loading SQLCipher on first use: the name it was loaded by
/// (CBL_SQLCIPHER_LIBRARY or libsqlcipher.so.0) and the file the dynamic loader found, NULL when it
/// is not loaded (the path also when unknown); and why it could not be, in the loader's words
/// without `csqlite_sqlcipher_api`'s advice ("" when it was loaded).
const char * _Nullable csqlite_sqlcipher_library_name(void);
const char * _Nullable csqlite_sqlcipher_library_path(void);
const char * _Nonnull csqlite_sqlcipher_load_cause(void);

#endif
