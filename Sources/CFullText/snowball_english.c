/*
 * The Snowball English stemmer ("Porter2"), the one LiteCore's unicodesn tokenizer applies for
 * the language "en" (libstemmer's english, in its 2006+ form: special R1 prefixes gener, commun,
 * arsen). Written from the algorithm's published description
 * (snowballstem.org/algorithms/english/stemmer.html); works on Unicode code points, where every
 * character but a e i o u y counts as a non-vowel.
 *
 * Snowball semantics kept throughout: each step finds the LONGEST listed suffix, then applies its
 * condition; a failed condition ends the step (no shorter suffix is tried).
 */
#include "fulltext_internal.h"
#include "CFullText.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t *w;
    int len;
    int p1, p2;     /* start of regions R1 and R2 */
} Word;

static int isVowel(uint32_t c) {
    return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y';
}

static int isDouble(const Word *w, int end) {
    if (end < 2 || w->w[end - 1] != w->w[end - 2]) return 0;
    switch (w->w[end - 1]) {
        case 'b': case 'd': case 'f': case 'g': case 'm': case 'n': case 'p': case 'r': case 't': return 1;
        default: return 0;
    }
}

static int isValidLiEnding(uint32_t c) {
    return c != 0 && c < 128 && strchr("cdeghkmnrt", (int)c) != NULL;
}

/* A short syllable ends at `end`: non-vowel (not w, x, Y) after a vowel after a non-vowel, or a
 * vowel at the start of the word followed by a non-vowel. */
static int endsWithShortSyllable(const Word *w, int end) {
    const uint32_t *s = w->w;
    if (end >= 3 && !isVowel(s[end - 1]) && s[end - 1] != 'w' && s[end - 1] != 'x' && s[end - 1] != 'Y'
        && isVowel(s[end - 2]) && !isVowel(s[end - 3]))
        return 1;
    return end == 2 && isVowel(s[0]) && !isVowel(s[1]);
}

static int endsWith(const Word *w, const char *suffix) {
    int n = (int)strlen(suffix);
    if (n > w->len) return 0;
    for (int i = 0; i < n; i++)
        if (w->w[w->len - n + i] != (unsigned char)suffix[i]) return 0;
    return 1;
}

static int equals(const Word *w, const char *s) {
    return (int)strlen(s) == w->len && endsWith(w, s);
}

/* The longest suffix of `list` (NULL-terminated) the word ends with, or NULL. */
static const char *longestSuffix(const Word *w, const char *const *list) {
    const char *best = NULL;
    size_t bestLen = 0;
    for (; *list; list++) {
        size_t n = strlen(*list);
        if ((best == NULL || n > bestLen) && endsWith(w, *list)) {
            best = *list;
            bestLen = n;
        }
    }
    return best;
}

/* Replaces the last `cut` code points with the ASCII `replacement`. */
static void replaceEnd(Word *w, int cut, const char *replacement) {
    w->len -= cut;
    for (const char *r = replacement; *r; r++) w->w[w->len++] = (unsigned char)*r;
}

/* Position just past the first non-vowel that follows a vowel, searching from `from`. */
static int regionStart(const Word *w, int from) {
    int i = from;
    while (i < w->len && !isVowel(w->w[i])) i++;
    if (i >= w->len) return w->len;
    while (i < w->len && isVowel(w->w[i])) i++;
    if (i >= w->len) return w->len;
    return i + 1;
}

static int hasVowelBefore(const Word *w, int end) {
    for (int i = 0; i < end; i++)
        if (isVowel(w->w[i])) return 1;
    return 0;
}

/* Irregular words replaced or kept whole (before anything else). Returns 1 when handled. */
static int exception1(Word *w) {
    static const char *const map[][2] = {
        {"skis", "ski"}, {"skies", "sky"}, {"dying", "die"}, {"lying", "lie"}, {"tying", "tie"},
        {"idly", "idl"}, {"gently", "gentl"}, {"ugly", "ugli"}, {"early", "earli"}, {"only", "onli"},
        {"singly", "singl"},
        {"sky", "sky"}, {"news", "news"}, {"howe", "howe"}, {"atlas", "atlas"}, {"cosmos", "cosmos"},
        {"bias", "bias"}, {"andes", "andes"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (equals(w, map[i][0])) {
            w->len = 0;
            replaceEnd(w, 0, map[i][1]);
            return 1;
        }
    }
    return 0;
}

/* Words left alone after step 1a. */
static int exception2(const Word *w) {
    static const char *const words[] = {
        "inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed", NULL,
    };
    for (const char *const *p = words; *p; p++)
        if (equals(w, *p)) return 1;
    return 0;
}

static void prelude(Word *w) {
    if (w->len > 0 && w->w[0] == '\'') {
        memmove(w->w, w->w + 1, (size_t)(w->len - 1) * sizeof(uint32_t));
        w->len--;
    }
    if (w->len > 0 && w->w[0] == 'y') w->w[0] = 'Y';
    for (int i = 1; i < w->len; i++)
        if (w->w[i] == 'y' && isVowel(w->w[i - 1])) w->w[i] = 'Y';
}

static void markRegions(Word *w) {
    static const char *const prefixes[] = {"gener", "commun", "arsen", NULL};
    w->p1 = -1;
    for (const char *const *p = prefixes; *p; p++) {
        int n = (int)strlen(*p);
        if (n <= w->len) {
            int same = 1;
            for (int i = 0; i < n && same; i++) same = w->w[i] == (unsigned char)(*p)[i];
            if (same) { w->p1 = n; break; }
        }
    }
    if (w->p1 < 0) w->p1 = regionStart(w, 0);
    w->p2 = regionStart(w, w->p1);
}

static void step1a(Word *w) {
    static const char *const apostrophes[] = {"'", "'s", "'s'", NULL};
    const char *a = longestSuffix(w, apostrophes);
    if (a) w->len -= (int)strlen(a);

    static const char *const suffixes[] = {"sses", "ied", "ies", "s", "us", "ss", NULL};
    const char *s = longestSuffix(w, suffixes);
    if (!s) return;
    if (!strcmp(s, "sses")) {
        replaceEnd(w, 4, "ss");
    } else if (!strcmp(s, "ied") || !strcmp(s, "ies")) {
        replaceEnd(w, 3, w->len - 3 >= 2 ? "i" : "ie");
    } else if (!strcmp(s, "s")) {
        /* Delete when a vowel occurs before the letter preceding the s (gaps, not gas). */
        if (w->len >= 2 && hasVowelBefore(w, w->len - 2)) w->len -= 1;
    }
}

static void step1b(Word *w) {
    static const char *const suffixes[] = {"eed", "eedly", "ed", "edly", "ing", "ingly", NULL};
    const char *s = longestSuffix(w, suffixes);
    if (!s) return;
    int n = (int)strlen(s);
    int start = w->len - n;
    if (!strcmp(s, "eed") || !strcmp(s, "eedly")) {
        if (start >= w->p1) replaceEnd(w, n, "ee");
        return;
    }
    if (!hasVowelBefore(w, start)) return;
    w->len = start;
    if (endsWith(w, "at") || endsWith(w, "bl") || endsWith(w, "iz")) {
        replaceEnd(w, 0, "e");
    } else if (isDouble(w, w->len)) {
        w->len -= 1;
    } else if (w->p1 == w->len && endsWithShortSyllable(w, w->len)) {
        replaceEnd(w, 0, "e");   /* a short word: hop(e), not hopp */
    }
}

static void step1c(Word *w) {
    if (w->len < 3) return;
    uint32_t last = w->w[w->len - 1];
    if ((last == 'y' || last == 'Y') && !isVowel(w->w[w->len - 2])) w->w[w->len - 1] = 'i';
}

static void step2(Word *w) {
    static const char *const from[] = {
        "tional", "enci", "anci", "abli", "entli", "izer", "ization", "ational", "ation", "ator",
        "alism", "aliti", "alli", "fulness", "ousli", "ousness", "iveness", "iviti", "biliti", "bli",
        "ogi", "fulli", "lessli", "li", NULL,
    };
    static const char *const to[] = {
        "tion", "ence", "ance", "able", "ent", "ize", "ize", "ate", "ate", "ate",
        "al", "al", "al", "ful", "ous", "ous", "ive", "ive", "ble", "ble",
        "og", "ful", "less", "", NULL,
    };
    const char *s = longestSuffix(w, from);
    if (!s) return;
    int n = (int)strlen(s);
    int start = w->len - n;
    if (start < w->p1) return;
    if (!strcmp(s, "ogi") && (start == 0 || w->w[start - 1] != 'l')) return;
    if (!strcmp(s, "li") && (start == 0 || !isValidLiEnding(w->w[start - 1]))) return;
    for (int i = 0; from[i]; i++)
        if (from[i] == s) { replaceEnd(w, n, to[i]); return; }
}

static void step3(Word *w) {
    static const char *const from[] = {
        "tional", "ational", "alize", "icate", "iciti", "ical", "ful", "ness", "ative", NULL,
    };
    static const char *const to[] = {"tion", "ate", "al", "ic", "ic", "ic", "", "", "", NULL};
    const char *s = longestSuffix(w, from);
    if (!s) return;
    int n = (int)strlen(s);
    int start = w->len - n;
    if (start < w->p1) return;
    if (!strcmp(s, "ative") && start < w->p2) return;
    for (int i = 0; from[i]; i++)
        if (from[i] == s) { replaceEnd(w, n, to[i]); return; }
}

static void step4(Word *w) {
    static const char *const suffixes[] = {
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ism", "ate",
        "iti", "ous", "ive", "ize", "ion", NULL,
    };
    const char *s = longestSuffix(w, suffixes);
    if (!s) return;
    int n = (int)strlen(s);
    int start = w->len - n;
    if (start < w->p2) return;
    if (!strcmp(s, "ion") && (start == 0 || (w->w[start - 1] != 's' && w->w[start - 1] != 't'))) return;
    w->len = start;
}

static void step5(Word *w) {
    if (w->len == 0) return;
    int start = w->len - 1;
    uint32_t last = w->w[start];
    if (last == 'e') {
        if (start >= w->p2 || (start >= w->p1 && !endsWithShortSyllable(w, start))) w->len = start;
    } else if (last == 'l') {
        if (start >= w->p2 && start > 0 && w->w[start - 1] == 'l') w->len = start;
    }
}

int cbl_english_stem_codepoints(uint32_t *codepoints, int len) {
    Word w = {codepoints, len, 0, 0};
    if (exception1(&w)) return w.len;
    if (w.len < 3) return w.len;
    prelude(&w);
    markRegions(&w);
    step1a(&w);
    if (!exception2(&w)) {
        step1b(&w);
        step1c(&w);
        step2(&w);
        step3(&w);
        step4(&w);
        step5(&w);
    }
    for (int i = 0; i < w.len; i++)
        if (w.w[i] == 'Y') w.w[i] = 'y';
    return w.len;
}

int cbl_snowball_english_stem(const char *word, size_t len, char *out, size_t cap) {
    uint32_t stackBuffer[64];
    uint32_t *cps = len + 2 <= 64 ? stackBuffer : malloc((len + 2) * sizeof(uint32_t));
    if (!cps) return -1;
    const unsigned char *p = (const unsigned char *)word, *end = p + len;
    int n = 0;
    while (p < end) cps[n++] = cbl_utf8_read(&p, end);
    n = cbl_english_stem_codepoints(cps, n);
    size_t written = 0;
    int result = 0;
    for (int i = 0; i < n; i++) {
        unsigned char bytes[4];
        size_t k = cbl_utf8_write(cps[i], bytes);
        if (written + k > cap) { result = -1; break; }
        memcpy(out + written, bytes, k);
        written += k;
    }
    if (cps != stackBuffer) free(cps);
    return result < 0 ? -1 : (int)written;
}
