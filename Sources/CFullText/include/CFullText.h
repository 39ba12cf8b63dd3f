/*
 * CFullText: the FTS3/FTS4 tokenizer LiteCore registers as "unicodesn" (Unicode word
 * splitting, case folding, optional diacritic removal, stop words, Snowball stemming), so that
 * full-text index tables written by Couchbase Lite 2.x/3.x can be read and written here and
 * ours by them. See specs/cbl2-format.md section 2.2 (FTS tables).
 *
 * Like CCollation.h this header includes no ICU and no SQLite header: the module is handed
 * to SQLite as an opaque pointer through `SELECT fts3_tokenizer('unicodesn', ?)`.
 */
#ifndef CFULLTEXT_H
#define CFULLTEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The tokenizer's `sqlite3_tokenizer_module` (FTS3 tokenizer interface, version 0). Its
/// address, as a pointer-sized blob, is what `fts3_tokenizer(name, ptr)` registers.
const void *cbl_unicodesn_module(void);

/// 1 when `name` is a stemmer this tokenizer applies ("en", "english"), else 0.
int cbl_unicodesn_has_stemmer(const char *name);

/// 1 when `name` is a stemmer LiteCore's unicodesn knows (da, nl, en, fi, fr, de, hu, it, no,
/// porter, pt, ro, ru, es, sv, tr, or their English names); such tables open here, but only
/// English is stemmed (others are tokenized without stemming).
int cbl_unicodesn_is_known_stemmer(const char *name);

/// Marks the calling thread as running a query (1) or indexing rows (0). While a query runs,
/// a stop word directly followed by `*` (a prefix search such as `he*`) is kept, as LiteCore's
/// tokenizer does.
void cbl_unicodesn_set_running_query(int running);

/// Snowball English ("Porter2") stem of the lowercase UTF-8 word `word[0..len)`, written to
/// `out` (capacity `cap`, no terminator). Returns the stem's length, or -1 when `cap` is too small.
int cbl_snowball_english_stem(const char *word, size_t len, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* CFULLTEXT_H */
