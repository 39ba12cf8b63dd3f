/*
 * The Unicode string collations of 2.x/3.x queries (`COLLATE UNICODE`, spec 9.3):
 * LiteCore registers them in SQLite as LCUnicode_<C|_><D|_>_<locale> and compares with
 * an ICU collator set up from the two sensitivities:
 *   case- and diacritic-sensitive  -> the locale's default (tertiary) strength;
 *   diacritic-sensitive only       -> secondary strength;
 *   diacritic-insensitive          -> primary strength, plus the case level when case matters.
 * ICU stays inside this file (see CCollation.h).
 */
#include "CCollation.h"

#include <stdlib.h>

#include <unicode/ucol.h>
#include <unicode/uloc.h>

struct cbl_unicode_collator {
    UCollator *collator;
};

cbl_unicode_collator *cbl_unicode_collator_open(const char *locale, int caseSensitive,
                                                int diacriticSensitive) {
    UErrorCode status = U_ZERO_ERROR;
    UCollator *coll = ucol_open(locale ? locale : "", &status);
    if (U_FAILURE(status) || coll == NULL)
        return NULL;
    if (diacriticSensitive) {
        if (!caseSensitive)
            ucol_setAttribute(coll, UCOL_STRENGTH, UCOL_SECONDARY, &status);
    } else {
        ucol_setAttribute(coll, UCOL_STRENGTH, UCOL_PRIMARY, &status);
        if (caseSensitive)
            ucol_setAttribute(coll, UCOL_CASE_LEVEL, UCOL_ON, &status);
    }
    if (U_FAILURE(status)) {
        ucol_close(coll);
        return NULL;
    }
    cbl_unicode_collator *result = malloc(sizeof *result);
    if (result == NULL) {
        ucol_close(coll);
        return NULL;
    }
    result->collator = coll;
    return result;
}

void cbl_unicode_collator_close(cbl_unicode_collator *c) {
    if (c == NULL)
        return;
    ucol_close(c->collator);
    free(c);
}

int cbl_unicode_collator_compare(const cbl_unicode_collator *c, const void *a, size_t aLen,
                                 const void *b, size_t bLen) {
    UErrorCode status = U_ZERO_ERROR;
    /* ucol_strcollUTF8 reads a const collator: safe from any thread. */
    UCollationResult r = ucol_strcollUTF8(c->collator, (const char *)a, (int32_t)aLen,
                                          (const char *)b, (int32_t)bLen, &status);
    if (U_FAILURE(status))
        return aLen < bLen ? -1 : (aLen > bLen ? 1 : 0);
    return r == UCOL_LESS ? -1 : (r == UCOL_GREATER ? 1 : 0);
}
