/*
 * CCollation: the SQLite collations of Couchbase Lite 1.x view indexes
 * (JSON, JSON_RAW, JSON_ASCII) and revision IDs (REVID), over raw text
 * (specs/cbl1-format.md section 6), and the 2.x/3.x Unicode collator
 * (`COLLATE UNICODE`, spec 9.3).
 *
 * This header deliberately includes no ICU and no SQLite header: ICU headers
 * clash with the ICU copy bundled in Foundation on Linux, so ICU stays an
 * implementation detail of the .c file.
 *
 * All inputs are pointer + length; nothing needs to be NUL-terminated and
 * nothing is ever read past the given length. Every function is thread-safe.
 */
#ifndef CCOLLATION_H
#define CCOLLATION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CBLCollationUnicode = 0, /* SQLite collation "JSON" (default) */
    CBLCollationRaw = 1,     /* SQLite collation "JSON_RAW" */
    CBLCollationASCII = 2    /* SQLite collation "JSON_ASCII" */
} CBLJSONCollationMode;

/// Compares two compact JSON texts per CBL 1.x rules; returns -1, 0 or 1.
/// arrayLimit: 0 = unlimited, else compare only the first N top-level array elements.
int cbl_json_collate(CBLJSONCollationMode mode,
                     const void *a, size_t aLen,
                     const void *b, size_t bLen,
                     int arrayLimit);

/// REVID collation (spec 6.9); returns -1, 0, 1.
int cbl_revid_collate(const void *a, size_t aLen, const void *b, size_t bLen);

/// Callbacks with exactly the signature sqlite3_create_collation_v2 wants (ctx unused).
int cbl_sqlite_collate_json(void *ctx, int aLen, const void *a, int bLen, const void *b);
int cbl_sqlite_collate_json_raw(void *ctx, int aLen, const void *a, int bLen, const void *b);
int cbl_sqlite_collate_json_ascii(void *ctx, int aLen, const void *a, int bLen, const void *b);
int cbl_sqlite_collate_revid(void *ctx, int aLen, const void *a, int bLen, const void *b);

/// Unicode string compare (UTF-8 in, already unescaped) exactly as the JSON
/// collation's string step does (fast ASCII path, ICU fallback); -1/0/1.
int cbl_collate_unicode_strings(const char *a, size_t aLen, const char *b, size_t bLen);


/// ICU's version ("72.1") into `library` and the JSON collation's collator version
/// ("153.120") into `collator` (empty when the collator cannot open); each at most size-1 bytes.
void cbl_collation_versions(char *library, char *collator, size_t size);

/// A LiteCore-style Unicode collator (2.x/3.x `COLLATE UNICODE`): ICU for `locale` ("" = root)
/// with strength from the two sensitivities. NULL when ICU cannot open it.
typedef struct cbl_unicode_collator cbl_unicode_collator;
cbl_unicode_collator *cbl_unicode_collator_open(const char *locale, int caseSensitive, int diacriticSensitive);
void cbl_unicode_collator_close(cbl_unicode_collator *collator);
/// Compares two UTF-8 strings; -1/0/1. Thread-safe.
int cbl_unicode_collator_compare(const cbl_unicode_collator *collator, const void *a, size_t aLen,
                                 const void *b, size_t bLen);

#ifdef __cplusplus
}
#endif

#endif /* CCOLLATION_H */
