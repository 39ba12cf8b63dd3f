/*
 * String comparison step of the JSON collations (spec 6.2 and 6.3).
 *
 * This is the only file that includes ICU headers: the public header must
 * stay ICU-free because Foundation on Linux bundles its own ICU.
 */
#include "collation_internal.h"
#include "CCollation.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <unicode/ucol.h>
#include <unicode/ucoleitr.h>
#include <unicode/uset.h>
#include <unicode/uversion.h>

/* ---------------------------------------------------------------------------
 * Priority tables (spec 6.2). Position (1-based) in the sequence
 *   \t \n \r (space) ` ^ _ - , ; : ! ? . ' " ( ) [ ] { } @ * / \ & # % + < = >
 *   | ~ $ 0-9 aAbB...zZ
 * Characters not listed (other control characters, DEL) have priority 0.
 * The case-insensitive table gives each lowercase letter the priority of its
 * uppercase letter, so that case only matters as a tie-breaker.
 * ------------------------------------------------------------------------- */
/* A letter pair: the lowercase letter just before its uppercase one, or (`ci`, case-insensitive)
   with the same priority. */
#define LETTER(lower, upper, priority, ci) [lower] = (priority) + (ci), [upper] = (priority) + 1
#define PRIORITY_TABLE(ci) { \
    ['\t'] = 1, ['\n'] = 2, ['\r'] = 3, [' '] = 4, ['`'] = 5, ['^'] = 6, ['_'] = 7, \
    ['-'] = 8, [','] = 9, [';'] = 10, [':'] = 11, ['!'] = 12, ['?'] = 13, ['.'] = 14, \
    ['\''] = 15, ['"'] = 16, ['('] = 17, [')'] = 18, ['['] = 19, [']'] = 20, ['{'] = 21, \
    ['}'] = 22, ['@'] = 23, ['*'] = 24, ['/'] = 25, ['\\'] = 26, ['&'] = 27, ['#'] = 28, \
    ['%'] = 29, ['+'] = 30, ['<'] = 31, ['='] = 32, ['>'] = 33, ['|'] = 34, ['~'] = 35, \
    ['$'] = 36, ['0'] = 37, ['1'] = 38, ['2'] = 39, ['3'] = 40, ['4'] = 41, ['5'] = 42, \
    ['6'] = 43, ['7'] = 44, ['8'] = 45, ['9'] = 46, \
    LETTER('a', 'A', 47, ci), LETTER('b', 'B', 49, ci), LETTER('c', 'C', 51, ci), LETTER('d', 'D', 53, ci), \
    LETTER('e', 'E', 55, ci), LETTER('f', 'F', 57, ci), LETTER('g', 'G', 59, ci), LETTER('h', 'H', 61, ci), \
    LETTER('i', 'I', 63, ci), LETTER('j', 'J', 65, ci), LETTER('k', 'K', 67, ci), LETTER('l', 'L', 69, ci), \
    LETTER('m', 'M', 71, ci), LETTER('n', 'N', 73, ci), LETTER('o', 'O', 75, ci), LETTER('p', 'P', 77, ci), \
    LETTER('q', 'Q', 79, ci), LETTER('r', 'R', 81, ci), LETTER('s', 'S', 83, ci), LETTER('t', 'T', 85, ci), \
    LETTER('u', 'U', 87, ci), LETTER('v', 'V', 89, ci), LETTER('w', 'W', 91, ci), LETTER('x', 'X', 93, ci), \
    LETTER('y', 'Y', 95, ci), LETTER('z', 'Z', 97, ci) \
}

static const uint8_t kPriority[128] = PRIORITY_TABLE(0);
static const uint8_t kPriorityCaseInsensitive[128] = PRIORITY_TABLE(1);

#undef PRIORITY_TABLE
#undef LETTER

int cbl_compare_bytes(const uint8_t *a, size_t aLen, const uint8_t *b, size_t bLen) {
    size_t n = aLen < bLen ? aLen : bLen;
    int c = n ? memcmp(a, b, n) : 0;   /* memcmp compares as unsigned char */
    if (c != 0)
        return c < 0 ? -1 : 1;
    return CBL_CMP(aLen, bLen);
}

int cbl_is_ascii(const uint8_t *s, size_t len) {
    /* Eight bytes at a time: the fast path runs on every string the collator sees. */
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t word;
        memcpy(&word, s + i, 8);
        acc |= word;
    }
    uint8_t tail = 0;
    for (; i < len; i++)
        tail |= s[i];
    return ((acc & 0x8080808080808080ULL) == 0) && (tail & 0x80) == 0;
}

/* Spec 6.2 fast path. The case-insensitive priorities decide at the first
 * difference; the first position whose case-sensitive priorities differ is
 * remembered and only used as a tie-breaker (lowercase before uppercase).
 * Two different unlisted characters both have priority 0, so they neither
 * decide nor set the tie-breaker.
 *
 * Identical bytes neither decide nor set the tie-breaker, so runs of them are
 * skipped eight bytes at a time; the tables are only consulted where the bytes
 * differ, and the scan resumes after a difference that only sets (or leaves)
 * the tie-breaker. */
int cbl_compare_ascii_priority(const uint8_t *a, size_t aLen, const uint8_t *b, size_t bLen) {
    size_t n = aLen < bLen ? aLen : bLen;
    int resultIfEqual = 0;
    size_t i = 0;
    for (;;) {
        /* Skip to the next differing byte. */
        while (i + 8 <= n) {
            uint64_t wa, wb;
            memcpy(&wa, a + i, 8);
            memcpy(&wb, b + i, 8);
            uint64_t x = wa ^ wb;
            if (x) {
                i += (size_t)(__builtin_ctzll(x) >> 3);   /* little-endian byte index */
                goto differ;
            }
            i += 8;
        }
        while (i < n && a[i] == b[i])
            i++;
        if (i >= n)
            break;
    differ:;
        uint8_t ca = a[i] & 0x7F, cb = b[i] & 0x7F;   /* mask: inputs are ASCII */
        int s = CBL_CMP(kPriorityCaseInsensitive[ca], kPriorityCaseInsensitive[cb]);
        if (s != 0)
            return s;
        if (resultIfEqual == 0)
            resultIfEqual = CBL_CMP(kPriority[ca], kPriority[cb]);
        i++;
    }
    if (aLen != bLen)
        return CBL_CMP(aLen, bLen);   /* a string that ends first is smaller */
    return resultIfEqual;
}

/* ---------------------------------------------------------------------------
 * ICU fallback (spec 6.2: root / en_US, tertiary strength).
 *
 * Thread safety: the collator is opened and configured exactly once under
 * pthread_once, and afterwards only used through ucol_strcollUTF8, which takes
 * a `const UCollator *`. ICU's design guide ("Thread-safe const APIs") states
 * that service objects are usable concurrently as long as every thread uses
 * only const APIs (C functions taking a const service pointer), so no
 * per-thread clone is needed.
 * ------------------------------------------------------------------------- */
static pthread_once_t gCollatorOnce = PTHREAD_ONCE_INIT;
static UCollator *gCollator = NULL;

static void open_collator(void) {
    /* en_US is what Android falls back to; it has no tailoring over root, and
     * ICU silently falls back to root if the en_US data is missing. */
    UErrorCode status = U_ZERO_ERROR;
    UCollator *coll = ucol_open("en_US", &status);
    if (U_FAILURE(status) || coll == NULL) {
        if (coll)
            ucol_close(coll);
        return;   /* no ICU data: callers fall back to byte order */
    }
    status = U_ZERO_ERROR;
    ucol_setAttribute(coll, UCOL_STRENGTH, UCOL_TERTIARY, &status);
    gCollator = coll;   /* never closed: lives for the whole process */
}

static const UCollator *shared_collator(void) {
    pthread_once(&gCollatorOnce, open_collator);
    return gCollator;
}

/* ---------------------------------------------------------------------------
 * The decisive-character rule (used by the JSON string scanner, spec 6.2).
 *
 * Let two strings agree up to some position except for letters that differ
 * only in case, and let the characters at that position be two "decisive"
 * characters with different case-insensitive priorities. Then:
 *  - if both whole strings are ASCII, the fast path decides right there by the
 *    case-insensitive priorities (case-only differences before it only set the
 *    tie-breaker);
 *  - otherwise ICU decides by the primary weights of those two characters: up
 *    to that position both strings yield the same sequence of primary weights
 *    (identical text yields identical collation elements, and a case pair
 *    yields one element each with the same primary), and there the two
 *    primaries differ, which decides a tertiary comparison whatever follows.
 * The rule holds for a character only if the collator gives it exactly one
 * collation element with a non-zero primary, no contraction, expansion or
 * context (prefix) mapping involves it (so that no mapping can span the
 * position, or join it with what follows), and the primary order of all
 * decisive characters is the order of the case-insensitive priority table,
 * with case pairs sharing a primary. Candidates are ASCII letters, digits and
 * space; each one is checked against the collator's data on first use (in
 * ICU 72 root, l, L and 4 appear in contractions and are left out), and
 * the rule is off entirely if the collator's settings make primaries depend
 * on anything else (alternate shifted, numeric collation). With the rule, the
 * result never depends on the rest of the strings, so they need not be
 * scanned for non-ASCII bytes at all.
 *
 * The checks only use const ICU APIs on the shared collator (see above), once,
 * under pthread_once; the tables are read-only afterwards.
 * ------------------------------------------------------------------------- */
static CBLDecisiveTables gDecisive;
static pthread_once_t gDecisiveOnce = PTHREAD_ONCE_INIT;
static atomic_int gDecisiveReady;   /* set (release) once gDecisive and gDecisiveEnabled are final */
static int gDecisiveEnabled;

/* The primary weights of a one-character string: its sort key up to the level
 * separator (byte 0x01). Returns the length, or -1 on error or overflow. */
static int primary_key(const UCollator *coll, UChar ch, uint8_t *out, int cap) {
    uint8_t key[64];
    int32_t n = ucol_getSortKey(coll, &ch, 1, key, (int32_t)sizeof key);
    if (n <= 0 || n > (int32_t)sizeof key)
        return -1;
    int len = 0;
    while (len < n && key[len] != 0x01) {
        if (len >= cap)
            return -1;
        out[len] = key[len];
        len++;
    }
    return len < n ? len : -1;   /* no separator: not a sort key we understand */
}

/* Whether a one-character string yields exactly one collation element. */
static int single_element(const UCollator *coll, UChar ch) {
    UErrorCode status = U_ZERO_ERROR;
    UCollationElements *it = ucol_openElements(coll, &ch, 1, &status);
    if (U_FAILURE(status) || it == NULL) {
        if (it) ucol_closeElements(it);
        return 0;
    }
    int count = 0;
    while (ucol_next(it, &status) != UCOL_NULLORDER && U_SUCCESS(status) && count < 3)
        count++;
    ucol_closeElements(it);
    return U_SUCCESS(status) && count == 1;   /* a continuation (long weight) counts as a second */
}

static int primary_order(const uint8_t *a, int aLen, const uint8_t *b, int bLen) {
    int n = aLen < bLen ? aLen : bLen;
    int c = memcmp(a, b, (size_t)n);
    if (c != 0)
        return c < 0 ? -1 : 1;
    return CBL_CMP(aLen, bLen);
}

/* Marks in `mentioned` every ASCII character that occurs in some string (or
 * range) of `set`. Returns 0 if the set could not be inspected. */
static int mark_ascii_in_set(const USet *set, uint8_t mentioned[128]) {
    int32_t items = uset_getItemCount(set);
    for (int32_t i = 0; i < items; i++) {
        UChar32 start, end;
        UChar str[64];
        UErrorCode status = U_ZERO_ERROR;
        int32_t len = uset_getItem(set, i, &start, &end, str, 64, &status);
        if (U_FAILURE(status))
            return 0;   /* a string too long to inspect */
        if (len == 0) {
            for (UChar32 ch = start; ch <= end && ch < 128; ch++)
                mentioned[ch] = 1;
            continue;
        }
        for (int32_t k = 0; k < len; k++)
            if (str[k] < 128)
                mentioned[str[k]] = 1;
    }
    return 1;
}

static void build_decisive_tables(const UCollator *coll) {
    static const char kCandidates[] =
        " 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    enum { kCount = sizeof kCandidates - 1, kKeyCap = 16 };
    UErrorCode status = U_ZERO_ERROR;
    if (ucol_getAttribute(coll, UCOL_ALTERNATE_HANDLING, &status) != UCOL_NON_IGNORABLE
        || ucol_getAttribute(coll, UCOL_NUMERIC_COLLATION, &status) != UCOL_OFF
        || U_FAILURE(status))
        return;
    USet *contractions = uset_openEmpty();
    if (contractions == NULL)
        return;
    /* Contractions and context (prefix) mappings, as strings. (Expansions are
     * checked per character below: enumerating them all costs more.) */
    ucol_getContractionsAndExpansions(coll, contractions, NULL, /* addPrefixes */ 1, &status);
    uint8_t mentioned[128] = { 0 };
    int inspected = U_SUCCESS(status) && mark_ascii_in_set(contractions, mentioned);
    uset_close(contractions);
    if (!inspected)
        return;
    uint8_t keys[kCount][kKeyCap];
    int keyLen[kCount];
    int usable[kCount];
    for (int i = 0; i < kCount; i++) {
        uint8_t ch = (uint8_t)kCandidates[i];
        keyLen[i] = primary_key(coll, ch, keys[i], kKeyCap);
        usable[i] = keyLen[i] > 0 && !mentioned[ch] && single_element(coll, ch);
    }
    /* Every pair of usable candidates: primary order == case-insensitive priority order. */
    for (int i = 0; i < kCount; i++) {
        for (int j = 0; j < kCount && usable[i]; j++) {
            if (!usable[j])
                continue;
            uint8_t ci = (uint8_t)kCandidates[i], cj = (uint8_t)kCandidates[j];
            int want = CBL_CMP(kPriorityCaseInsensitive[ci], kPriorityCaseInsensitive[cj]);
            if (primary_order(keys[i], keyLen[i], keys[j], keyLen[j]) != want)
                return;   /* the collator disagrees with the table: no rule at all */
        }
    }
    for (int i = 0; i < kCount; i++) {
        uint8_t ch = (uint8_t)kCandidates[i];
        /* A letter is decisive only together with its other case, so that a
         * case-only difference is always between two decisive characters. */
        uint8_t other = (uint8_t)(ch >= 'a' && ch <= 'z' ? ch - 32 : (ch >= 'A' && ch <= 'Z' ? ch + 32 : ch));
        int otherUsable = 0;
        for (int j = 0; j < kCount; j++)
            if ((uint8_t)kCandidates[j] == other)
                otherUsable = usable[j];
        if (usable[i] && otherUsable)
            gDecisive.rank[ch] = kPriorityCaseInsensitive[ch];
        gDecisive.priority[ch] = kPriority[ch];
    }
    gDecisiveEnabled = 1;
}

/* Built on first use (about 10 ms: enumerating the contractions of root), not
 * when the collator is opened, so that callers that never need the rule do not
 * pay for it. */
static void open_decisive_tables(void) {
    const UCollator *coll = shared_collator();
    if (coll != NULL)
        build_decisive_tables(coll);
    atomic_store_explicit(&gDecisiveReady, 1, memory_order_release);
}

const CBLDecisiveTables *cbl_decisive_tables(void) {
    if (!atomic_load_explicit(&gDecisiveReady, memory_order_acquire))
        pthread_once(&gDecisiveOnce, open_decisive_tables);
    return gDecisiveEnabled ? &gDecisive : NULL;
}

/* ucol_strcollUTF8 takes int32_t lengths; SQLite never produces longer
 * strings, but the public API takes size_t, so clamp and let length break a
 * tie on the (practically impossible) clamped case. */
static int compare_icu(const uint8_t *a, size_t aLen, const uint8_t *b, size_t bLen) {
    const UCollator *coll = shared_collator();
    if (coll == NULL)
        return cbl_compare_bytes(a, aLen, b, bLen);
    int clamped = 0;
    if (aLen > INT32_MAX) { aLen = INT32_MAX; clamped = 1; }
    if (bLen > INT32_MAX) { bLen = INT32_MAX; clamped = 1; }
    UErrorCode status = U_ZERO_ERROR;
    UCollationResult r = ucol_strcollUTF8(coll, (const char *)a, (int32_t)aLen,
                                          (const char *)b, (int32_t)bLen, &status);
    if (U_FAILURE(status))
        return cbl_compare_bytes(a, aLen, b, bLen);
    if (r == UCOL_LESS)
        return -1;
    if (r == UCOL_GREATER)
        return 1;
    return clamped ? CBL_CMP(aLen, bLen) : 0;
}

int cbl_compare_unicode(const uint8_t *a, size_t aLen, int aIsASCII,
                        const uint8_t *b, size_t bLen, int bIsASCII) {
    /* Spec 6.2: the fast path applies only when BOTH whole strings are ASCII;
     * otherwise the whole two strings go to the Unicode collator. */
    if (aIsASCII && bIsASCII)
        return cbl_compare_ascii_priority(a, aLen, b, bLen);
    if (aLen == bLen && memcmp(a, b, aLen) == 0)
        return 0;   /* identical text: equal without asking ICU */
    return compare_icu(a, aLen, b, bLen);
}

int cbl_collate_unicode_strings(const char *a, size_t aLen, const char *b, size_t bLen) {
    const uint8_t *ua = (const uint8_t *)(a ? a : "");
    const uint8_t *ub = (const uint8_t *)(b ? b : "");
    if (!a) aLen = 0;
    if (!b) bLen = 0;
    return cbl_compare_unicode(ua, aLen, cbl_is_ascii(ua, aLen), ub, bLen, cbl_is_ascii(ub, bLen));
}

/* The benchmark and test baseline (declared in CCollationBaseline.h, in no product's header):
 * ICU directly on the same shared collator, no JSON parsing and no ASCII fast path; -1/0/1.
 * Lengths are assumed to fit in int32_t (benchmark and test keys are short). */
int cbl_icu_strcoll_baseline(const char *a, size_t aLen, const char *b, size_t bLen);
int cbl_icu_strcoll_baseline(const char *a, size_t aLen, const char *b, size_t bLen) {
    const UCollator *coll = shared_collator();
    if (coll == NULL)
        return cbl_compare_bytes((const uint8_t *)a, aLen, (const uint8_t *)b, bLen);
    UErrorCode status = U_ZERO_ERROR;
    UCollationResult r = ucol_strcollUTF8(coll, a, (int32_t)aLen, b, (int32_t)bLen, &status);
    return r == UCOL_LESS ? -1 : (r == UCOL_GREATER ? 1 : 0);
}

/* ICU's library version ("72.1") and the JSON collator's version ("153.120"), as CouchDB's
 * `_node/_local/_versions` and a view's `_info` report them. */
void cbl_collation_versions(char *library, char *collator, size_t size) {
    UVersionInfo version;
    char text[U_MAX_VERSION_STRING_LENGTH];
    if (size == 0) return;
    u_getVersion(version);
    u_versionToString(version, text);
    strncpy(library, text, size - 1);
    library[size - 1] = 0;
    collator[0] = 0;
    const UCollator *coll = shared_collator();
    if (coll) {
        ucol_getVersion(coll, version);
        u_versionToString(version, text);
        strncpy(collator, text, size - 1);
        collator[size - 1] = 0;
    }
}
