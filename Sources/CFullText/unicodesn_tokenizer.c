/*
 * The "unicodesn" FTS3/FTS4 tokenizer, as LiteCore registers it for full-text indexes
 * (`CREATE VIRTUAL TABLE "kv_default::NAME" USING fts4("text", tokenize=unicodesn ...)`).
 *
 * Behaviour (that of SQLite's unicode61 tokenizer plus LiteCore's additions):
 *  - a token is a run of letters (L*), numbers (N*), private-use and unassigned code points,
 *    which may also contain the combining marks Latin letters are composed with; everything else
 *    separates tokens;
 *  - each character is case-folded; with remove_diacritics=1 (the tokenizer's default) a Latin
 *    letter with one diacritic becomes its ASCII base letter and those marks are dropped;
 *  - character classes come from ICU, so code points whose Unicode data changed after SQLite's
 *    unicode61 tables (about 2% of all, in rare scripts and new symbols) may split differently;
 *  - "stopwords=en|fr" / "stopwordlist=w1 w2 ..." drop listed tokens (positions are not counted);
 *  - "stemmer=en|english" applies the Snowball English stemmer. LiteCore's other stemmer names
 *    are accepted but not applied; an unknown name (or option) is an error, as in LiteCore.
 *
 * The FTS3 tokenizer ABI (sqlite3_tokenizer_module, version 0) is declared here because SQLite
 * does not ship fts3_tokenizer.h; SQLite only ever sees the module through this layout.
 * This file holds the ICU calls; the public header stays ICU-free (see CFullText.h).
 */
#include "CFullText.h"
#include "fulltext_internal.h"
#include "unicodesn_stopwords.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <unicode/uchar.h>
#include <unicode/unorm2.h>

/* SQLite result codes the FTS tokenizer interface uses. */
enum { kOK = 0, kError = 1, kNoMem = 7, kDone = 101 };

typedef struct Tokenizer Tokenizer;
typedef struct Cursor Cursor;

/* Layout of sqlite3_tokenizer_module (FTS3 tokenizer interface, iVersion 0). */
typedef struct {
    int iVersion;
    int (*xCreate)(int argc, const char *const *argv, Tokenizer **tokenizer);
    int (*xDestroy)(Tokenizer *tokenizer);
    int (*xOpen)(Tokenizer *tokenizer, const char *input, int length, Cursor **cursor);
    int (*xClose)(Cursor *cursor);
    int (*xNext)(Cursor *cursor, const char **token, int *length, int *start, int *end, int *position);
    int (*xLanguageid)(Cursor *cursor, int languageID);
} TokenizerModule;

typedef struct {
    const char *text;   /* points into `storage` or a static list */
    size_t length;
} StopWord;

struct Tokenizer {
    const TokenizerModule *module;    /* sqlite3_tokenizer: set by SQLite */
    int removeDiacritics;
    int stemEnglish;
    StopWord *stopWords;              /* sorted; NULL when none */
    size_t stopWordCount;
    char *stopWordStorage;
    uint32_t *exceptions;             /* code points whose token/separator class is inverted */
    size_t exceptionCount;
};

struct Cursor {
    Tokenizer *tokenizer;             /* sqlite3_tokenizer_cursor: set by SQLite (and here) */
    const unsigned char *input;
    int length;
    int offset;
    int position;
    unsigned char *token;             /* folded token, then its stem */
    size_t tokenCapacity;
    uint32_t *codepoints;             /* the token as code points, for the stemmer */
    size_t codepointCapacity;
};

static _Thread_local int runningQuery = 0;

void cbl_unicodesn_set_running_query(int running) { runningQuery = running; }

/* ---------------------------------------------------------------------------------------------
 * UTF-8
 * ------------------------------------------------------------------------------------------- */

uint32_t cbl_utf8_read(const unsigned char **pp, const unsigned char *end) {
    const unsigned char *p = *pp;
    uint32_t c = *p++;
    if (c >= 0xC0) {
        int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
        c &= extra == 3 ? 0x07 : extra == 2 ? 0x0F : 0x1F;
        while (extra-- > 0 && p < end && (*p & 0xC0) == 0x80) c = (c << 6) | (*p++ & 0x3F);
        if (c < 0x80 || (c & 0xFFFFF800) == 0xD800 || (c & 0xFFFFFFFE) == 0xFFFE || c > 0x10FFFF) c = 0xFFFD;
    } else if (c >= 0x80) {
        c = 0xFFFD;     /* stray continuation byte */
    }
    *pp = p;
    return c;
}

size_t cbl_utf8_write(uint32_t c, unsigned char *out) {
    if (c < 0x80) { out[0] = (unsigned char)c; return 1; }
    if (c < 0x800) { out[0] = (unsigned char)(0xC0 | (c >> 6)); out[1] = (unsigned char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (c >> 12));
        out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (c >> 18));
    out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* ---------------------------------------------------------------------------------------------
 * Character classes and folding
 * ------------------------------------------------------------------------------------------- */

/* The combining marks unicode61 treats as diacritics (part of a word, dropped when removing
 * diacritics): those Latin letters are composed with. Other marks separate words, as there. */
static int isCombiningDiacritic(uint32_t c) {
    if (c < 0x300 || c > 0x331) return 0;
    switch (c) {
        case 0x300: case 0x301: case 0x302: case 0x303: case 0x304: case 0x306: case 0x307: case 0x308:
        case 0x309: case 0x30A: case 0x30B: case 0x30C: case 0x30F: case 0x311: case 0x31B: case 0x323:
        case 0x324: case 0x325: case 0x326: case 0x327: case 0x328: case 0x32D: case 0x32E: case 0x330:
        case 0x331:
            return 1;
        default:
            return 0;
    }
}

static int isTokenCharacter(uint32_t c) {
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    switch (u_charType((UChar32)c)) {
        case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER:
        case U_MODIFIER_LETTER: case U_OTHER_LETTER:
        case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER:
        case U_PRIVATE_USE_CHAR:
        case U_UNASSIGNED:      /* unicode61's tables list separators only: anything else is a letter */
            return 1;
        default:
            return 0;
    }
}

static int isException(const Tokenizer *t, uint32_t c) {
    size_t lo = 0, hi = t->exceptionCount;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->exceptions[mid] == c) return 1;
        if (t->exceptions[mid] < c) lo = mid + 1; else hi = mid;
    }
    return 0;
}

static int isTokenChar(const Tokenizer *t, uint32_t c) {
    return isTokenCharacter(c) ^ (t->exceptionCount > 0 && isException(t, c));
}

/* The ASCII base letter of a Latin letter with one diacritic (é -> e, ǎ -> a), or c itself: like
 * unicode61's remove_diacritics=1, letters of other scripts (ά, й), letters with two marks (ǖ)
 * and letters whose base is not ASCII (ǣ) keep theirs. */
static uint32_t withoutDiacritics(uint32_t c) {
    if (isCombiningDiacritic(c)) return 0;
    if (c < 0xC0 || (c > 0x24F && (c < 0x1E00 || c > 0x1EFF))) return c;
    UErrorCode err = U_ZERO_ERROR;
    const UNormalizer2 *nfd = unorm2_getNFDInstance(&err);
    if (U_FAILURE(err) || !nfd) return c;
    UChar buffer[8];
    int32_t n = unorm2_getDecomposition(nfd, (UChar32)c, buffer, 8, &err);
    if (U_FAILURE(err) || n != 2 || buffer[0] >= 0x80 || !isCombiningDiacritic(buffer[1])) return c;
    /* İ has no simple case folding, so its base is still upper-case here. */
    return buffer[0] >= 'A' && buffer[0] <= 'Z' ? buffer[0] + 32u : buffer[0];
}

/* Case-folded (and, when asked, diacritic-free) c; 0 means "drop it". */
static uint32_t fold(uint32_t c, int removeDiacritics) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    uint32_t folded = (uint32_t)u_foldCase((UChar32)c, U_FOLD_CASE_DEFAULT);
    return removeDiacritics ? withoutDiacritics(folded) : folded;
}

/* ---------------------------------------------------------------------------------------------
 * Stop words
 * ------------------------------------------------------------------------------------------- */

static int compareStopWords(const void *a, const void *b) {
    const StopWord *x = a, *y = b;
    if (x->length != y->length) return x->length < y->length ? -1 : 1;
    return memcmp(x->text, y->text, x->length);
}

/* Takes a copy of the space-separated `list`; replaces any list already set. */
static int setStopWords(Tokenizer *t, const char *list, size_t length) {
    char *storage = malloc(length + 1);
    if (!storage) return kNoMem;
    memcpy(storage, list, length);
    storage[length] = 0;
    size_t count = 0;
    for (size_t i = 0; i < length; i++)
        if (storage[i] != ' ' && (i == 0 || storage[i - 1] == ' ')) count++;
    StopWord *words = calloc(count ? count : 1, sizeof(StopWord));
    if (!words) { free(storage); return kNoMem; }
    size_t n = 0;
    for (size_t i = 0; i < length;) {
        while (i < length && storage[i] == ' ') i++;
        size_t start = i;
        while (i < length && storage[i] != ' ') i++;
        if (i > start) words[n++] = (StopWord){storage + start, i - start};
    }
    qsort(words, n, sizeof(StopWord), compareStopWords);
    free(t->stopWords);
    free(t->stopWordStorage);
    t->stopWords = words;
    t->stopWordCount = n;
    t->stopWordStorage = storage;
    return kOK;
}

static int isStopWord(const Tokenizer *t, const unsigned char *word, size_t length) {
    if (!t->stopWords) return 0;
    StopWord key = {(const char *)word, length};
    return bsearch(&key, t->stopWords, t->stopWordCount, sizeof(StopWord), compareStopWords) != NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------------------------- */

static const char *const kKnownStemmers[][2] = {
    {"da", "danish"}, {"nl", "dutch"}, {"en", "english"}, {"fi", "finnish"}, {"fr", "french"},
    {"de", "german"}, {"hu", "hungarian"}, {"it", "italian"}, {"no", "norwegian"}, {"porter", "porter"},
    {"pt", "portuguese"}, {"ro", "romanian"}, {"ru", "russian"}, {"es", "spanish"}, {"sv", "swedish"},
    {"tr", "turkish"},
};

static int isKnownStemmer(const char *name, size_t length) {
    for (size_t i = 0; i < sizeof kKnownStemmers / sizeof kKnownStemmers[0]; i++)
        for (int k = 0; k < 2; k++)
            if (strlen(kKnownStemmers[i][k]) == length && !memcmp(kKnownStemmers[i][k], name, length)) return 1;
    return 0;
}

static int isEnglish(const char *name, size_t length) {
    return (length == 2 && !memcmp(name, "en", 2)) || (length == 7 && !memcmp(name, "english", 7));
}

int cbl_unicodesn_has_stemmer(const char *name) { return name && isEnglish(name, strlen(name)); }

int cbl_unicodesn_is_known_stemmer(const char *name) { return name && isKnownStemmer(name, strlen(name)); }

static int addExceptions(Tokenizer *t, const char *chars, size_t length, int asTokenChars) {
    const unsigned char *p = (const unsigned char *)chars, *end = p + length;
    while (p < end) {
        uint32_t c = cbl_utf8_read(&p, end);
        if (isTokenCharacter(c) == asTokenChars || isCombiningDiacritic(c) || isException(t, c)) continue;
        uint32_t *grown = realloc(t->exceptions, (t->exceptionCount + 1) * sizeof(uint32_t));
        if (!grown) return kNoMem;
        t->exceptions = grown;
        size_t i = t->exceptionCount++;
        while (i > 0 && grown[i - 1] > c) { grown[i] = grown[i - 1]; i--; }
        grown[i] = c;
    }
    return kOK;
}

static int hasPrefix(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int tokenizerDestroy(Tokenizer *t) {
    if (t) {
        free(t->stopWords);
        free(t->stopWordStorage);
        free(t->exceptions);
        free(t);
    }
    return kOK;
}

static int tokenizerCreate(int argc, const char *const *argv, Tokenizer **out) {
    Tokenizer *t = calloc(1, sizeof(Tokenizer));
    if (!t) return kNoMem;
    t->removeDiacritics = 1;
    int rc = kOK;
    int haveStopWords = 0;
    for (int i = 0; i < argc && rc == kOK; i++) {
        const char *arg = argv[i];
        size_t n = strlen(arg);
        if (!strcmp(arg, "remove_diacritics=1")) {
            t->removeDiacritics = 1;
        } else if (!strcmp(arg, "remove_diacritics=0")) {
            t->removeDiacritics = 0;
        } else if (hasPrefix(arg, "tokenchars=")) {
            rc = addExceptions(t, arg + 11, n - 11, 1);
        } else if (hasPrefix(arg, "separators=")) {
            rc = addExceptions(t, arg + 11, n - 11, 0);
        } else if (hasPrefix(arg, "stemmer=")) {
            if (isEnglish(arg + 8, n - 8)) t->stemEnglish = 1;
            else if (!isKnownStemmer(arg + 8, n - 8)) rc = kError;
        } else if (hasPrefix(arg, "stopwords=")) {
            /* The first stop-word option wins, as in LiteCore. */
            if (!haveStopWords) {
                const char *lang = arg + 10;
                if (!strcmp(lang, "en") || !strcmp(lang, "english")) {
                    rc = setStopWords(t, kEnglishStopWords, strlen(kEnglishStopWords));
                    haveStopWords = 1;
                } else if (!strcmp(lang, "fr") || !strcmp(lang, "french")) {
                    rc = setStopWords(t, kFrenchStopWords, strlen(kFrenchStopWords));
                    haveStopWords = 1;
                }
            }
        } else if (hasPrefix(arg, "stopwordlist=")) {
            if (!haveStopWords && n > 13) {
                rc = setStopWords(t, arg + 13, n - 13);
                haveStopWords = 1;
            }
        } else {
            rc = kError;
        }
    }
    if (rc != kOK) {
        tokenizerDestroy(t);
        t = NULL;
    }
    *out = t;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Cursors
 * ------------------------------------------------------------------------------------------- */

static int cursorOpen(Tokenizer *t, const char *input, int length, Cursor **out) {
    Cursor *c = calloc(1, sizeof(Cursor));
    if (!c) return kNoMem;
    c->tokenizer = t;
    c->input = (const unsigned char *)(input ? input : "");
    c->length = !input ? 0 : length < 0 ? (int)strlen(input) : length;
    *out = c;
    return kOK;
}

static int cursorClose(Cursor *c) {
    if (c) {
        free(c->token);
        free(c->codepoints);
        free(c);
    }
    return kOK;
}

static int reserveToken(Cursor *c, size_t needed) {
    if (needed <= c->tokenCapacity) return kOK;
    size_t capacity = needed + 64;
    unsigned char *grown = realloc(c->token, capacity);
    if (!grown) return kNoMem;
    c->token = grown;
    c->tokenCapacity = capacity;
    return kOK;
}

/* Replaces the token (UTF-8, `*length` bytes) by its English stem. */
static int stemToken(Cursor *c, size_t *length) {
    size_t needed = *length + 2;
    if (needed > c->codepointCapacity) {
        uint32_t *grown = realloc(c->codepoints, needed * sizeof(uint32_t));
        if (!grown) return kNoMem;
        c->codepoints = grown;
        c->codepointCapacity = needed;
    }
    const unsigned char *p = c->token, *end = c->token + *length;
    int n = 0;
    while (p < end) c->codepoints[n++] = cbl_utf8_read(&p, end);
    n = cbl_english_stem_codepoints(c->codepoints, n);
    size_t out = 0;
    for (int i = 0; i < n; i++) {
        if (reserveToken(c, out + 4) != kOK) return kNoMem;
        out += cbl_utf8_write(c->codepoints[i], c->token + out);
    }
    *length = out;
    return kOK;
}

static int cursorNext(Cursor *c, const char **token, int *tokenLength, int *startOffset, int *endOffset,
                      int *position) {
    const Tokenizer *t = c->tokenizer;
    const unsigned char *input = c->input, *limit = c->input + c->length;
    for (;;) {
        /* Skip separators. */
        const unsigned char *p = input + c->offset, *start = p;
        uint32_t ch = 0;
        while (p < limit) {
            start = p;
            ch = cbl_utf8_read(&p, limit);
            if (isTokenChar(t, ch)) break;
            start = p;
        }
        if (start >= limit) return kDone;

        /* Fold the token's characters; p is just past `ch`. */
        size_t length = 0;
        const unsigned char *tokenEnd;
        for (;;) {
            tokenEnd = p;
            uint32_t folded = fold(ch, t->removeDiacritics);
            if (folded) {
                if (reserveToken(c, length + 4) != kOK) return kNoMem;
                length += cbl_utf8_write(folded, c->token + length);
            }
            if (p >= limit) break;
            const unsigned char *next = p;
            ch = cbl_utf8_read(&next, limit);
            if (!isTokenChar(t, ch) && !isCombiningDiacritic(ch)) break;
            p = next;
        }
        c->offset = (int)(tokenEnd - input);

        /* A stop word is skipped, except a query's prefix term (`he*`). */
        int prefixTerm = runningQuery && tokenEnd < limit && *tokenEnd == '*';
        if (length > 0 && isStopWord(t, c->token, length) && !prefixTerm) continue;
        if (length == 0) continue;

        if (t->stemEnglish && stemToken(c, &length) != kOK) return kNoMem;
        *token = (const char *)c->token;
        *tokenLength = (int)length;
        *startOffset = (int)(start - input);
        *endOffset = (int)(tokenEnd - input);
        *position = c->position++;
        return kOK;
    }
}

static const TokenizerModule kModule = {
    0, tokenizerCreate, tokenizerDestroy, cursorOpen, cursorClose, cursorNext, NULL,
};

const void *cbl_unicodesn_module(void) { return &kModule; }
