/*
 * REVID collation (spec 6.9): "<generation>-<suffix>" revision IDs sort by
 * numeric generation first, then by the suffix bytes.
 */
#include "collation_internal.h"
#include "CCollation.h"

#include <string.h>

/* A generation longer than 8 digits ('-' beyond byte index 8) is not treated
 * as numeric (spec 6.9 step 1); this also keeps the parse within int range. */
enum { kMaxDashIndex = 8 };

/* Position of the '-' that ends the generation, or -1 when there is none or
 * it is too far in. Only the first kMaxDashIndex + 1 bytes are examined. */
static int dash_index(const uint8_t *s, size_t len) {
    size_t n = len < (size_t)kMaxDashIndex + 1 ? len : (size_t)kMaxDashIndex + 1;
    const void *dash = memchr(s, '-', n);
    return dash ? (int)((const uint8_t *)dash - s) : -1;
}

/* Decimal value of s[0..n), or 0 if empty or not all digits (0 is never a
 * valid generation, so it doubles as the failure value; spec 6.9 step 2). */
static int parse_generation(const uint8_t *s, int n) {
    int value = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        value = value * 10 + (s[i] - '0');
    }
    return value;
}

int cbl_revid_collate(const void *a, size_t aLen, const void *b, size_t bLen) {
    const uint8_t *ua = (const uint8_t *)(a ? a : "");
    const uint8_t *ub = (const uint8_t *)(b ? b : "");
    if (!a) aLen = 0;
    if (!b) bLen = 0;

    int dashA = dash_index(ua, aLen), dashB = dash_index(ub, bLen);
    /* Step 1: no usable '-', or both single-digit generations (where byte
     * order already equals numeric order) -> plain byte order. */
    if (dashA < 0 || dashB < 0 || (dashA == 1 && dashB == 1))
        return cbl_compare_bytes(ua, aLen, ub, bLen);

    /* Step 2: unparseable or zero generation -> byte order. */
    int genA = parse_generation(ua, dashA), genB = parse_generation(ub, dashB);
    if (genA == 0 || genB == 0)
        return cbl_compare_bytes(ua, aLen, ub, bLen);

    /* Step 3: generation, then suffix after the '-'. */
    if (genA != genB)
        return CBL_CMP(genA, genB);
    return cbl_compare_bytes(ua + dashA + 1, aLen - (size_t)dashA - 1,
                             ub + dashB + 1, bLen - (size_t)dashB - 1);
}

int cbl_sqlite_collate_revid(void *ctx, int aLen, const void *a, int bLen, const void *b) {
    (void)ctx;
    return cbl_revid_collate(a, aLen > 0 ? (size_t)aLen : 0, b, bLen > 0 ? (size_t)bLen : 0);
}
