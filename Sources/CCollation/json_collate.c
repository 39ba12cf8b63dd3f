/*
 * JSON, JSON_RAW and JSON_ASCII collations of Couchbase Lite 1.x (spec 6.1-6.5).
 *
 * The two JSON texts are scanned in lock-step, one token at a time, without
 * building a parse tree: this runs for every key comparison while SQLite
 * builds a view index, so the common case allocates nothing.
 *
 * Inputs come from SQLite as pointer + length and are not NUL-terminated:
 * every read below is bounded by the cursor's end pointer, and hostile input
 * (truncation, garbage, deep nesting) only changes the result, never safety.
 */
#define _GNU_SOURCE   /* strtod_l and newlocale on glibc/musl */

#include "collation_internal.h"
#include "CCollation.h"

#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __APPLE__
#include <xlocale.h>
#endif

/* ------------------------------------------------------------------------- */
/* Tokens (spec 6.1 step 1). The enum order IS the JSON/JSON_ASCII rank.     */
/* ------------------------------------------------------------------------- */
typedef enum {
    kEndArray, kEndObject, kComma, kColon,
    kNull, kFalse, kTrue, kNumber, kString,
    kArray, kObject, kIllegal
} Token;

/* Spec 6.4: JSON_RAW ranks: number < false < null < true < object < array <
 * string; punctuation below everything and illegal above, as in 6.1. */
static const int kRawRank[] = {
    [kEndArray] = -4, [kEndObject] = -3, [kComma] = -2, [kColon] = -1,
    [kNumber] = 0, [kFalse] = 1, [kNull] = 2, [kTrue] = 3,
    [kObject] = 4, [kArray] = 5, [kString] = 6, [kIllegal] = 7,
};

typedef struct {
    const uint8_t *p;     /* next unread byte */
    const uint8_t *end;   /* one past the last byte */
} Cursor;

static size_t remaining(const Cursor *c) {
    return (size_t)(c->end - c->p);
}

static void skip(Cursor *c, size_t n) {
    size_t r = remaining(c);
    c->p += n < r ? n : r;
}

/* Token of each possible first byte, plus one (0 = illegal), so that the
 * classification is one load instead of a multi-way branch. */
static const uint8_t kTokenPlusOne[256] = {
    [']'] = kEndArray + 1, ['}'] = kEndObject + 1, [','] = kComma + 1, [':'] = kColon + 1,
    ['n'] = kNull + 1, ['f'] = kFalse + 1, ['t'] = kTrue + 1,
    ['-'] = kNumber + 1, ['0'] = kNumber + 1, ['1'] = kNumber + 1, ['2'] = kNumber + 1,
    ['3'] = kNumber + 1, ['4'] = kNumber + 1, ['5'] = kNumber + 1, ['6'] = kNumber + 1,
    ['7'] = kNumber + 1, ['8'] = kNumber + 1, ['9'] = kNumber + 1,
    ['"'] = kString + 1, ['['] = kArray + 1, ['{'] = kObject + 1,
};

/* End of input is "illegal" like any unexpected byte (spec 6.1: whitespace or
 * anything else), so a truncated text sorts after a complete one and two
 * texts that run out together compare equal. */
static inline Token classify(const Cursor *c) {
    if (c->p >= c->end)
        return kIllegal;
    unsigned t = kTokenPlusOne[*c->p];
    return t ? (Token)(t - 1) : kIllegal;
}

static int rank(CBLJSONCollationMode mode, Token t) {
    return mode == CBLCollationRaw ? kRawRank[t] : (int)t;
}

/* ------------------------------------------------------------------------- */
/* Numbers (spec 6.1 step 3: strtod semantics, compared as doubles).         */
/* ------------------------------------------------------------------------- */

/* strtod honours LC_NUMERIC; a host app that called setlocale() with a
 * comma-decimal locale would otherwise misparse "2.5". Parse in the C locale. */
static pthread_once_t gLocaleOnce = PTHREAD_ONCE_INIT;
static locale_t gCLocale = (locale_t)0;

static void make_c_locale(void) {
    gCLocale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static double c_strtod(const char *s, char **end) {
    pthread_once(&gLocaleOnce, make_c_locale);
    if (gCLocale != (locale_t)0)
        return strtod_l(s, end, gCLocale);
    return strtod(s, end);
}

/* Only these bytes can belong to a decimal number. Restricting the copy to
 * them keeps strtod's hex ("0x1p3"), "inf" and "nan" extensions out of the
 * collation, and bounds the parse by the remaining length. */
static int is_number_byte(uint8_t ch) {
    return (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E';
}

static size_t number_span(const Cursor *c) {
    size_t n = 0, r = remaining(c);
    while (n < r && is_number_byte(c->p[n]))
        n++;
    return n;
}

/* Fast path (Clinger) for the commonest keys: "-"? digits ("." digits)?
 * with at most 15 digits in all. The value is m / 10^k with m < 2^53 and
 * 10^k exact in a double, so one IEEE division yields the correctly rounded
 * result, i.e. exactly what strtod returns; glibc's strtod is much slower. */
static int parse_simple_decimal(const uint8_t *s, size_t n, double *out) {
    static const double kPow10[] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    };
    size_t first = (n > 0 && s[0] == '-') ? 1 : 0;
    int64_t mantissa = 0;
    int digits = 0, fractionDigits = -1;   /* -1: no '.' seen yet */
    for (size_t i = first; i < n; i++) {
        uint8_t ch = s[i];
        if (ch >= '0' && ch <= '9') {
            if (++digits > 15)
                return 0;
            mantissa = mantissa * 10 + (ch - '0');
            if (fractionDigits >= 0)
                fractionDigits++;
        } else if (ch == '.' && fractionDigits < 0 && i > first) {
            fractionDigits = 0;            /* "1." is 1.0 for strtod too */
        } else {
            return 0;                      /* exponent, sign, second '.': strtod */
        }
    }
    if (digits == 0)
        return 0;
    double v = (double)mantissa / kPow10[fractionDigits > 0 ? fractionDigits : 0];
    *out = first ? -v : v;
    return 1;
}

/* strtod over s[0..n), which is not NUL-terminated: copy to a stack buffer,
 * or to the heap for absurdly long numbers (e.g. many leading zeros).
 * *consumed = length of the longest valid prefix (0 if none, value 0.0). */
static double parse_number(const uint8_t *s, size_t n, size_t *consumed) {
    char stackBuf[64];
    char *buf = stackBuf;
    if (n >= sizeof stackBuf) {
        buf = malloc(n + 1);
        if (buf == NULL) {               /* out of memory: parse a prefix */
            buf = stackBuf;
            n = sizeof stackBuf - 1;
        }
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end = buf;
    double d = c_strtod(buf, &end);
    *consumed = (size_t)(end - buf);
    if (buf != stackBuf)
        free(buf);
    return d;
}

/* Reads the number at the cursor and moves past the longest valid prefix
 * (at least one byte, so that a lone "-" that strtod rejects still makes
 * progress; it counts as 0). */
static double read_number(Cursor *c) {
    size_t n = number_span(c), used;
    double d;
    if (parse_simple_decimal(c->p, n, &d))
        used = n;
    else
        d = parse_number(c->p, n, &used);
    skip(c, used ? used : 1);
    return d;
}

/* Compares the numbers at both cursors and advances past them. */
static int compare_numbers(Cursor *a, Cursor *b) {
    double da = read_number(a);
    double db = read_number(b);
    return CBL_CMP(da, db);   /* IEEE compare: -0 == 0; NaN cannot occur */
}

/* ------------------------------------------------------------------------- */
/* Strings (spec 6.1 escapes, 6.2 / 6.3 comparison).                         */
/* ------------------------------------------------------------------------- */

enum { kStackStringSize = 256 };

/* A string token as found in the source text. */
typedef struct {
    const uint8_t *raw;    /* bytes between the quotes, still escaped */
    size_t rawLen;
    int hasEscape;
    int isASCII;           /* of the raw bytes; recomputed after decoding */
} RawString;

/* The decoded text of a string with escapes. */
typedef struct {
    const uint8_t *bytes;
    size_t len;
    int isASCII;
    uint8_t *heap;         /* owned decode buffer, if the stack one was too small */
    uint8_t stack[kStackStringSize];
} DecodedString;

/* SWAR helpers: a word whose bytes are all `b`, and a mask of the bytes of `w` equal to `b`
 * (exact for the first match, which is all the scanner uses: a borrow only starts at a
 * byte that really matches, and only corrupts the bytes above it). */
#define CBL_ONES  0x0101010101010101ULL
#define CBL_HIGHS 0x8080808080808080ULL
static inline uint64_t bytes_equal(uint64_t w, uint8_t b) {
    uint64_t x = w ^ (CBL_ONES * b);
    return (x - CBL_ONES) & ~x & CBL_HIGHS;
}

static inline uint64_t quote_or_backslash(uint64_t w) {
    return bytes_equal(w, '"') | bytes_equal(w, '\\');
}

/* Up to 8 bytes at p (p <= end), zero-filled past `end`; *valid = how many are real.
 * `lo` is a lower bound of the readable bytes (the start of the string). */
static inline uint64_t load_upto8(const uint8_t *p, const uint8_t *end, const uint8_t *lo, size_t *valid) {
    size_t r = (size_t)(end - p);
    uint64_t w;
    if (r >= 8) {
        memcpy(&w, p, 8);
        *valid = 8;
        return w;
    }
    *valid = r;
    if (r == 0)
        return 0;
    if ((size_t)(end - lo) >= 8) {
        memcpy(&w, end - 8, 8);          /* the last 8 bytes, unread ones moved first */
        return w >> (8 * (8 - r));
    }
    w = 0;
    for (size_t k = 0; k < r; k++)
        w |= (uint64_t)p[k] << (8 * k);
    return w;
}

/* Finds the extent of the string starting at the opening quote and moves the
 * cursor past the closing quote. An unterminated string runs to the end of
 * the input. A backslash always consumes the following byte, so \" does not
 * end the string. */
static inline void scan_string(Cursor *c, RawString *s) {
    const uint8_t *start = c->p + 1;
    size_t n = (size_t)(c->end - start), i = 0;
    uint64_t highs = 0;
    int stopped = 0;
    /* One pass, eight bytes at a time, to the first quote or backslash, collecting the high
     * bits on the way (the whole-string ASCII test of the fast path, spec 6.2). */
    for (;;) {
        size_t valid;
        uint64_t w = load_upto8(start + i, c->end, start, &valid);
        uint64_t stop = quote_or_backslash(w);   /* never in the zero fill */
        if (stop) {
            unsigned k = (unsigned)(__builtin_ctzll(stop) >> 3);   /* little-endian byte index */
            highs |= w & ((1ULL << (8 * k)) - 1);                  /* k <= 7 */
            i += k;
            stopped = 1;
            break;
        }
        highs |= w;
        i += valid;
        if (valid < 8)
            break;
    }
    int escape = 0;
    if (stopped && start[i] == '\\') {
        /* Escapes (rare): a backslash consumes the following byte, so \" does not end
         * the string. The decoded text's ASCII-ness is recomputed in decode_string. */
        uint8_t tailHigh = 0;
        escape = 1;
        while (i < n) {
            uint8_t ch = start[i];
            if (ch == '"')
                break;
            if (ch == '\\') {
                i += (i + 1 < n) ? 2 : 1;
                continue;
            }
            tailHigh |= ch;
            i++;
        }
        highs |= tailHigh;
    }
    s->raw = start;
    s->rawLen = i;
    s->hasEscape = escape;
    s->isASCII = (highs & CBL_HIGHS) == 0;
    c->p = (i < n) ? start + i + 1 : c->end;
}

static int hex_value(uint8_t ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Reads 4 hex digits at s[i..]; returns 0 if fewer remain or one is bad. */
static int read_hex4(const uint8_t *s, size_t n, size_t i, uint32_t *out) {
    if (n < 4 || i > n - 4)
        return 0;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = hex_value(s[i + k]);
        if (h < 0)
            return 0;
        v = (v << 4) | (uint32_t)h;
    }
    *out = v;
    return 1;
}

static size_t utf8_encode(uint32_t cp, uint8_t out[4]) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes a \u escape whose 4 hex digits start at s[*i] (already validated as
 * `first`), joining a following \uDC00-\uDFFF into one code point. Unlike the
 * 1.x platforms (spec 6.1, 6.6), non-ASCII escapes become real UTF-8; a lone
 * surrogate becomes U+FFFD. */
static uint32_t decode_unicode_escape(const uint8_t *s, size_t n, size_t *i, uint32_t first) {
    *i += 4;
    if (first < 0xD800 || first > 0xDFFF)
        return first;
    uint32_t low;
    if (first <= 0xDBFF && *i + 1 < n && s[*i] == '\\' && s[*i + 1] == 'u'
        && read_hex4(s, n, *i + 2, &low) && low >= 0xDC00 && low <= 0xDFFF) {
        *i += 6;
        return 0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00);
    }
    return 0xFFFD;
}

/* Spec 6.1: \b \n \r \t \uXXXX are decoded; any other escaped byte stands for
 * itself (\\ \" \/ and, quirk, \f -> 'f'). The output never exceeds the
 * input length, so `cap` = input length always suffices; it is still checked.
 * Returns the decoded length. */
static size_t decode_escapes(const uint8_t *s, size_t n, uint8_t *out, size_t cap) {
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t ch = s[i];
        if (ch != '\\') {
            if (o >= cap) break;
            out[o++] = ch;
            i++;
            continue;
        }
        if (i + 1 >= n)
            break;                      /* truncated: lone trailing backslash */
        uint8_t e = s[i + 1];
        i += 2;
        uint32_t cp;
        switch (e) {
            case 'b': cp = '\b'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (read_hex4(s, n, i, &cp))
                    cp = decode_unicode_escape(s, n, &i, cp);
                else
                    cp = 'u';           /* malformed \u: the 'u' stands for itself */
                break;
            default:
                /* Copied as a raw byte (not a code point): it may be the lead
                 * byte of a UTF-8 sequence whose tail follows unescaped. */
                if (o >= cap) return o;
                out[o++] = e;
                continue;
        }
        uint8_t tmp[4];
        size_t k = utf8_encode(cp, tmp);
        if (o + k > cap) break;
        memcpy(out + o, tmp, k);
        o += k;
    }
    return o;
}

/* Produces the decoded text of a scanned string that has escapes. */
static void decode_string(const RawString *s, DecodedString *d) {
    uint8_t *buf = d->stack;
    size_t cap = sizeof d->stack;
    d->heap = NULL;
    if (s->rawLen > cap) {
        d->heap = malloc(s->rawLen);
        if (d->heap) {          /* on failure, decode a truncated prefix */
            buf = d->heap;
            cap = s->rawLen;
        }
    }
    d->len = decode_escapes(s->raw, s->rawLen, buf, cap);
    d->bytes = buf;
    d->isASCII = cbl_is_ascii(buf, d->len);
}

static void use_raw_string(const RawString *s, DecodedString *d) {
    d->bytes = s->raw;
    d->len = s->rawLen;
    d->isASCII = s->isASCII;
    d->heap = NULL;
}

static void release_string(DecodedString *d) {
    if (d->heap) {
        free(d->heap);
        d->heap = NULL;
    }
}

/* The rare case: at least one string has escapes and must be decoded first. */
static __attribute__((noinline)) int compare_escaped_strings(CBLJSONCollationMode mode,
                                                             const RawString *ra, const RawString *rb) {
    /* Identical source text decodes identically: equal in every mode. */
    if (ra->rawLen == rb->rawLen && memcmp(ra->raw, rb->raw, ra->rawLen) == 0)
        return 0;
    DecodedString a, b;
    if (ra->hasEscape) decode_string(ra, &a); else use_raw_string(ra, &a);
    if (rb->hasEscape) decode_string(rb, &b); else use_raw_string(rb, &b);
    int result;
    if (mode == CBLCollationUnicode)
        result = cbl_compare_unicode(a.bytes, a.len, a.isASCII, b.bytes, b.len, b.isASCII);
    else
        result = cbl_compare_bytes(a.bytes, a.len, b.bytes, b.len);   /* spec 6.3 */
    release_string(&a);
    release_string(&b);
    return result;
}

/* Unicode-mode string comparison by the decisive-character rule
 * (collate_strings.c): both strings are walked together, eight bytes at a
 * time, to the first difference. Returns 1 with *result set if that decides,
 * or if the strings end together and are equal (*result = 0, cursors moved
 * past both strings). Returns 0, leaving the cursors alone, whenever the rule
 * does not apply (a backslash, a difference at a non-decisive character or
 * where one string ends, strings that differ only in case and are not all
 * ASCII, unterminated input): the caller then does the full comparison. */
static inline int compare_strings_decisive(const CBLDecisiveTables *t, Cursor *ca, Cursor *cb, int *result) {
    const uint8_t *a = ca->p + 1, *b = cb->p + 1;   /* past the opening quotes */
    size_t i = 0;
    int tie = 0;
    uint64_t highs = 0;
    for (;;) {
        size_t va, vb;
        uint64_t wa = load_upto8(a + i, ca->end, a, &va);
        uint64_t wb = load_upto8(b + i, cb->end, b, &vb);
        size_t valid = va < vb ? va : vb;
        uint64_t diff = wa ^ wb;
        uint64_t stop = quote_or_backslash(wa);
        size_t d = diff ? (size_t)(__builtin_ctzll(diff) >> 3) : 8;   /* first differing byte */
        size_t s = stop ? (size_t)(__builtin_ctzll(stop) >> 3) : 8;   /* first quote/backslash of a */
        if (s < d && s < valid) {
            /* Same quote or backslash in both after identical (or case-only) bytes. */
            highs |= wa & ((1ULL << (8 * s)) - 1);
            if (a[i + s] != '"')
                return 0;                           /* escape: decode first */
            if (tie != 0) {
                if (highs & CBL_HIGHS)
                    return 0;                       /* case difference in non-ASCII text: ICU */
                *result = tie;                      /* all ASCII: the tie-breaker decides */
                return 1;
            }
            /* Identical text: equal in every collation; continue after the strings. */
            ca->p = a + i + s + 1;
            cb->p = b + i + s + 1;
            *result = 0;
            return 1;
        }
        if (d < valid) {
            uint8_t x = a[i + d], y = b[i + d];
            unsigned rx = t->rank[x], ry = t->rank[y];
            if (rx == 0 || ry == 0)
                return 0;                           /* not decisive (or an end of string) */
            if (rx != ry) {
                *result = rx < ry ? -1 : 1;
                return 1;
            }
            if (tie == 0)                           /* same letter, other case */
                tie = CBL_CMP(t->priority[x], t->priority[y]);
            highs |= wa & ((1ULL << (8 * d)) - 1);
            i += d + 1;
            continue;
        }
        if (valid < 8)
            return 0;                               /* an input ends inside its string */
        highs |= wa;
        i += 8;
    }
}

/* Compares the strings at both cursors and advances past them. Without escapes the
 * source bytes are the text: they go to the comparison as they are. */
static inline int compare_strings(CBLJSONCollationMode mode, const CBLDecisiveTables *decisive,
                                  Cursor *ca, Cursor *cb) {
    int r;
    if (decisive && compare_strings_decisive(decisive, ca, cb, &r))
        return r;
    RawString a, b;
    scan_string(ca, &a);
    scan_string(cb, &b);
    if (__builtin_expect(a.hasEscape | b.hasEscape, 0))
        return compare_escaped_strings(mode, &a, &b);
    if (mode == CBLCollationUnicode)
        return cbl_compare_unicode(a.raw, a.rawLen, a.isASCII, b.raw, b.rawLen, b.isASCII);
    return cbl_compare_bytes(a.raw, a.rawLen, b.raw, b.rawLen);   /* spec 6.3 */
}

/* ------------------------------------------------------------------------- */
/* Lock-step driver (spec 6.1 steps 2-4, arrayLimit per 6.5).                */
/* ------------------------------------------------------------------------- */

/* Counts one more top-level element when a comma is seen at depth 1; returns
 * 1 once `arrayLimit` elements have been compared (result: equal). */
static int reached_array_limit(int arrayLimit, int64_t depth, int64_t *elements) {
    if (arrayLimit <= 0 || depth != 1)
        return 0;
    return ++*elements >= arrayLimit;
}

int cbl_json_collate(CBLJSONCollationMode mode, const void *a, size_t aLen,
                     const void *b, size_t bLen, int arrayLimit) {
    if (mode != CBLCollationRaw && mode != CBLCollationASCII)
        mode = CBLCollationUnicode;
    const uint8_t *ua = (const uint8_t *)(a ? a : "");
    const uint8_t *ub = (const uint8_t *)(b ? b : "");
    Cursor ca = { ua, ua + (a ? aLen : 0) };
    Cursor cb = { ub, ub + (b ? bLen : 0) };
    int64_t depth = 0, elements = 0;   /* 64-bit: depth is bounded by length */
    const CBLDecisiveTables *decisive = NULL;
    int decisiveLoaded = 0;

    do {
        Token ta = classify(&ca), tb = classify(&cb);
        if (ta != tb) {
            if ((ta == kComma || tb == kComma) && reached_array_limit(arrayLimit, depth, &elements))
                return 0;
            return CBL_CMP(rank(mode, ta), rank(mode, tb));
        }
        int r = 0;
        switch (ta) {
            case kNull:
            case kTrue:
                skip(&ca, 4);
                skip(&cb, 4);
                break;
            case kFalse:
                skip(&ca, 5);
                skip(&cb, 5);
                break;
            case kNumber:
                r = compare_numbers(&ca, &cb);
                break;
            case kString:
                if (mode == CBLCollationUnicode && !decisiveLoaded) {
                    decisive = cbl_decisive_tables();
                    decisiveLoaded = 1;
                }
                r = compare_strings(mode, decisive, &ca, &cb);
                break;
            case kArray:
            case kObject:
                depth++;
                skip(&ca, 1);
                skip(&cb, 1);
                break;
            case kEndArray:
            case kEndObject:
                depth--;
                skip(&ca, 1);
                skip(&cb, 1);
                break;
            case kComma:
                if (reached_array_limit(arrayLimit, depth, &elements))
                    return 0;
                skip(&ca, 1);
                skip(&cb, 1);
                break;
            case kColon:
                skip(&ca, 1);
                skip(&cb, 1);
                break;
            case kIllegal:
                return 0;   /* both hit an illegal byte at the same step */
        }
        if (r != 0)
            return r;
    } while (depth > 0);
    return 0;   /* one complete value each, all tokens equal */
}

/* SQLite collation callbacks (sqlite3_create_collation_v2 signature). */
static int sqlite_collate(CBLJSONCollationMode mode, int aLen, const void *a, int bLen, const void *b) {
    return cbl_json_collate(mode, a, aLen > 0 ? (size_t)aLen : 0, b, bLen > 0 ? (size_t)bLen : 0, 0);
}

int cbl_sqlite_collate_json(void *ctx, int aLen, const void *a, int bLen, const void *b) {
    (void)ctx;
    return sqlite_collate(CBLCollationUnicode, aLen, a, bLen, b);
}

int cbl_sqlite_collate_json_raw(void *ctx, int aLen, const void *a, int bLen, const void *b) {
    (void)ctx;
    return sqlite_collate(CBLCollationRaw, aLen, a, bLen, b);
}

int cbl_sqlite_collate_json_ascii(void *ctx, int aLen, const void *a, int bLen, const void *b) {
    (void)ctx;
    return sqlite_collate(CBLCollationASCII, aLen, a, bLen, b);
}
