/*
 * Internal declarations shared by the CCollation .c files.
 * Not part of the public API (lives outside include/).
 */
#ifndef CCOLLATION_INTERNAL_H
#define CCOLLATION_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Sign of (x - y) for any ordered scalar type, without overflow. */
#define CBL_CMP(x, y) (((x) > (y)) - ((x) < (y)))

/* Bytewise unsigned compare; the shorter string sorts first when it is a
 * prefix of the longer one (spec 6.3 and 6.9 step 1). */
int cbl_compare_bytes(const uint8_t *a, size_t aLen, const uint8_t *b, size_t bLen);

/* Spec 6.2: the 98-character priority-table comparison. Both inputs must be
 * pure ASCII (the caller checks). */
int cbl_compare_ascii_priority(const uint8_t *a, size_t aLen, const uint8_t *b, size_t bLen);

/* Spec 6.2: fast path if both are pure ASCII (flags supplied by the caller,
 * who usually knows them already from scanning), otherwise ICU. */
int cbl_compare_unicode(const uint8_t *a, size_t aLen, int aIsASCII,
                        const uint8_t *b, size_t bLen, int bIsASCII);

/* The decisive-character rule of the JSON collation (collate_strings.c). For
 * each byte, `rank` is its case-insensitive priority if it is a decisive
 * character, else 0; `priority` is its case-sensitive priority (spec 6.2). */
typedef struct {
    uint8_t rank[256];
    uint8_t priority[256];
} CBLDecisiveTables;

/* The tables, or NULL if the rule does not hold for the collator (or there is
 * no ICU collator at all). Opens the shared collator on first use. */
const CBLDecisiveTables *cbl_decisive_tables(void);

/* Returns 1 if no byte has the high bit set. */
int cbl_is_ascii(const uint8_t *s, size_t len);

#endif
