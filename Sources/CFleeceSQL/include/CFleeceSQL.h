#ifndef CFLEECESQL_H
#define CFLEECESQL_H
/*
 * The Fleece-reading SQL functions of 2.x queries (spec 9.3) in C: fl_value, fl_nested_value,
 * fl_exists, fl_count, fl_result, fl_bool and the table-valued fl_each. They read a row's Fleece
 * body in place (no copy, no validation pass) with every read bounds-checked, resolve the path
 * argument and its shared keys once per statement (sqlite3_set_auxdata), and hand the rare cases
 * they do not answer themselves (collections as results, malformed data, unusual paths) to the
 * Swift implementations through `cfl_host.fallback`, so results stay exactly the Swift ones.
 */
#include <stddef.h>
#include <stdint.h>

/* The functions `cfl_host.fallback` is asked to run (the Swift closure of the same SQL name). */
enum {
    CFL_FN_VALUE = 0,      /* fl_value and fl_nested_value */
    CFL_FN_EXISTS = 1,     /* fl_exists */
    CFL_FN_COUNT = 2,      /* fl_count */
    CFL_FN_RESULT = 3,     /* fl_result */
    CFL_FN_COUNT_OF_FUNCTIONS = 4
};

/* What the C functions need from the Swift side; `context` is passed back to each callback. */
typedef struct cfl_host {
    void * _Nullable context;
    /* The shared-key code of a UTF-8 key, -1 when it has none; `*table_count` = the table's size. */
    int (* _Nonnull key_code)(void * _Nullable context, const uint8_t * _Nullable key, size_t length,
                              int * _Nonnull table_count);
    /* Sets the result of `context` to the text of shared-key code `code` (NULL when unknown). */
    void (* _Nonnull key_string)(void * _Nullable context, void * _Nullable sqlite_context, int code);
    /* Runs the Swift implementation of function `function` (CFL_FN_…) for this call. */
    void (* _Nonnull fallback)(void * _Nullable context, int function, void * _Nullable sqlite_context,
                               int argc, void * _Nullable * _Nullable argv);
    /* fl_each: sets the result to item `index` of the collection at `path` in `blob` (a body or a
       stand-alone Fleece value), for items that are collections. */
    void (* _Nonnull each_item)(void * _Nullable context, void * _Nullable sqlite_context,
                                const uint8_t * _Nullable blob, size_t blob_length,
                                const uint8_t * _Nullable path, size_t path_length, int64_t index);
    /* Called once when the connection is closed (the functions are gone): releases `context`. */
    void (* _Nonnull release)(void * _Nullable context);
} cfl_host;

/* Registers the functions on `db` (a sqlite3 *) of library `api` (a const csqlite_api *).
   `host` is copied; its context must outlive the connection. Returns an SQLite result code. */
int cfl_register_functions(void * _Nonnull db, const void * _Nonnull api, const cfl_host * _Nonnull host);

/* The Fleece body inside a `body` column value: a 2.x rev-tree row's current revision body
   (spec 3.3), else the bytes themselves. Returns 0 when a rev tree has no current body. */
int cfl_current_body(const uint8_t * _Nullable bytes, size_t length,
                     const uint8_t * _Nullable * _Nonnull body, size_t * _Nonnull body_length);

#endif
