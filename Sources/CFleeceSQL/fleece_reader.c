#include "fleece_reader.h"
#include <stdlib.h>

int cfl_current_body(const uint8_t *bytes, size_t length, const uint8_t **body, size_t *body_length) {
    /* RawRevision::isRevTree (spec 3.4): record sizes lead to a zero size inside the blob, and
       the first record is not empty. */
    size_t offset = 0;
    int first = 1, tree = 0;
    while (offset + 4 <= length) {
        size_t size = cfl_be32(bytes + offset);
        if (size == 0) { tree = !first; break; }
        if (size < 8 || size > length - offset) break;
        first = 0;
        offset += size;
    }
    if (!tree) { *body = bytes; *body_length = length; return 1; }
    /* Revision 0 is the current one (spec 3.3); its body follows its revID and sequence. */
    size_t size = cfl_be32(bytes);
    if (!(bytes[6] & 0x80)) return 0;
    size_t cursor = 8 + (size_t)bytes[7];
    if (cursor >= size) return 0;
    while (cursor < size && (bytes[cursor] & 0x80)) cursor++;
    cursor++;
    if (cursor > size) return 0;
    *body = bytes + cursor;
    *body_length = size - cursor;
    return 1;
}

cfl_path *cfl_path_compile(const cfl_host *host, const uint8_t *text, size_t length) {
    /* At most one step per byte; keys are copied (unescaped) after the steps. */
    size_t steps_size = sizeof(cfl_path) + (length + 1) * sizeof(cfl_step);
    cfl_path *path = calloc(1, steps_size + 2 * length + 1);
    if (!path) return NULL;
    uint8_t *keys = (uint8_t *)path + steps_size;
    path->text = keys + length;
    if (length) memcpy(path->text, text, length);
    path->text_length = length;
    size_t i = 0;
    /* Swift reads the path as Characters: a non-ASCII byte right after a syntax character could
       be a combining mark that makes one Character of both, which only the Swift parser reads. */
    for (size_t k = 1; k < length; k++) {
        uint8_t prev = text[k - 1];
        if ((text[k] & 0x80) && (prev == '.' || prev == '[' || prev == ']' || prev == '\\' || prev == '$')) {
            path->unsupported = 1;
            return path;
        }
    }
    if (length > 1 && text[0] == '$' && text[1] == '.') i = 2;
    if (i < length && text[i] == '.') i++;
    uint8_t *key = keys;
    size_t key_length = 0;
    int have_key = 0;
#define FLUSH() do { \
        if (have_key || key_length) { \
            cfl_step *s = &path->steps[path->step_count++]; \
            s->key = key; s->length = key_length; \
            s->code = host->key_code(host->context, key, key_length, &s->known_keys); \
            key += key_length; key_length = 0; have_key = 0; \
        } } while (0)
    for (; i < length; i++) {
        uint8_t c = text[i];
        if (c == '\\') {
            i++;
            if (i < length) { key[key_length++] = text[i]; have_key = 1; }
        } else if (c == '.') {
            FLUSH();
        } else if (c == '[') {
            FLUSH();
            size_t close = i + 1;
            while (close < length && text[close] != ']') close++;
            /* Swift's Int(String): an optional sign then at least one digit. */
            size_t j = i + 1;
            int negative = 0;
            if (j < close && (text[j] == '-' || text[j] == '+')) { negative = text[j] == '-'; j++; }
            if (close >= length || j >= close || close - j > 18) { path->unsupported = 1; return path; }
            long n = 0;
            for (; j < close; j++) {
                if (text[j] < '0' || text[j] > '9') { path->unsupported = 1; return path; }
                n = n * 10 + (text[j] - '0');
            }
            cfl_step *s = &path->steps[path->step_count++];
            s->is_index = 1;
            s->index = negative ? -n : n;
            i = close;
        } else {
            key[key_length++] = c;
            have_key = 1;
        }
    }
    FLUSH();
#undef FLUSH
    return path;
}

void cfl_path_free(void *path) { free(path); }

/* Where the dict key at `k` sorts against the one sought (integer keys first, then strings in
   memcmp order, shorter first): <0 before it, 0 equal, >0 after, 2 (CFL_KEY_BAD) malformed. */
#define CFL_KEY_BAD 2
static inline __attribute__((always_inline)) int key_order(cfl_data d, long k, int by_code, long code,
                                                           const uint8_t *key, size_t length) {
    uint8_t tag = d.p[k] >> 4;
    if (by_code) {
        if (tag != CFL_SHORT) return 1;
        long v = (long)cfl_short_int(d, k);
        return v < code ? -1 : v > code;
    }
    if (tag == CFL_SHORT) return -1;
    if (tag != CFL_STRING) return CFL_KEY_BAD;
    const uint8_t *s;
    size_t n;
    if (!cfl_string(d, k, &s, &n)) return CFL_KEY_BAD;
    size_t m = n < length ? n : length;
    int cmp = m ? memcmp(s, key, m) : 0;
    if (cmp != 0) return cmp < 0 ? -1 : 1;
    return n < length ? -1 : n > length;
}

/* Binary search of the dict's keys for the integer `code` (`by_code`) or the string `key`. Each
   call site passes a constant `by_code`, so the compiler keeps one specialized loop per kind. */
static inline __attribute__((always_inline)) long find_key(cfl_data d, cfl_coll c, int by_code, long code,
                                                           const uint8_t *key, size_t length) {
    long width = c.wide ? 4 : 2;
    long lo = 0, hi = c.count;
    while (lo < hi) {
        long mid = (lo + hi) >> 1;
        long k = cfl_resolve(d, c.first + 2 * mid * width, c.wide);
        if (k < 0) return CFL_BAD;
        int order = key_order(d, k, by_code, code, key, length);
        if (order == CFL_KEY_BAD) return CFL_BAD;
        if (order == 0) return mid;
        if (order < 0) lo = mid + 1; else hi = mid;
    }
    return CFL_NONE;
}

static long find_code(cfl_data d, cfl_coll c, long code) { return find_key(d, c, 1, code, NULL, 0); }

static long find_string(cfl_data d, cfl_coll c, const uint8_t *key, size_t length) {
    return find_key(d, c, 0, 0, key, length);
}

/* Whether the dict holds an integer key the table did not have `known` keys ago. */
static int has_newer_code(cfl_data d, cfl_coll c, int known) {
    long width = c.wide ? 4 : 2;
    long lo = 0, hi = c.count;          /* find the last integer key */
    while (lo < hi) {
        long mid = (lo + hi) >> 1;
        long k = cfl_resolve(d, c.first + 2 * mid * width, c.wide);
        if (k < 0) return 0;
        if ((d.p[k] >> 4) == CFL_SHORT) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return 0;
    long k = cfl_resolve(d, c.first + 2 * (lo - 1) * width, c.wide);
    return k >= 0 && cfl_short_int(d, k) >= known;
}

long cfl_dict_get(const cfl_host *host, cfl_step *step, cfl_data d, long at) {
    cfl_coll c;
    if (!cfl_collection(d, at, &c)) return CFL_BAD;
    long width = c.wide ? 4 : 2;
    long i = CFL_NONE;
    if (step->code >= 0) {
        i = find_code(d, c, step->code);
        if (i == CFL_BAD) return CFL_BAD;
    }
    if (i < 0) {
        /* Data written before the key had a code keeps it as a string. */
        i = find_string(d, c, step->key, step->length);
        if (i == CFL_BAD) return CFL_BAD;
        if (i < 0 && step->code < 0 && has_newer_code(d, c, step->known_keys)) {
            /* The table grew since the path was compiled: the key may have a code now. */
            step->code = host->key_code(host->context, step->key, step->length, &step->known_keys);
            if (step->code >= 0) i = find_code(d, c, step->code);
            if (i == CFL_BAD) return CFL_BAD;
        }
        if (i < 0) return CFL_NONE;
    }
    return cfl_resolve(d, c.first + (2 * i + 1) * width, c.wide);
}

long cfl_path_evaluate(const cfl_host *host, cfl_path *path, cfl_data d, long v) {
    for (int s = 0; s < path->step_count; s++) {
        cfl_step *step = &path->steps[s];
        uint8_t tag = d.p[v] >> 4;
        if (step->is_index) {
            if (tag != CFL_ARRAY) return CFL_NONE;
            cfl_coll c;
            if (!cfl_collection(d, v, &c)) return CFL_BAD;
            long i = step->index < 0 ? c.count + step->index : step->index;
            if (i < 0 || i >= c.count) return CFL_NONE;
            v = cfl_resolve(d, c.first + i * (c.wide ? 4 : 2), c.wide);
        } else {
            if (tag != CFL_DICT) return CFL_NONE;
            v = cfl_dict_get(host, step, d, v);
        }
        if (v < 0) return v;
    }
    return v;
}

static const char empty_text[1] = "";

int cfl_set_scalar(const csqlite_api *api, sqlite3_context *ctx, cfl_data d, long at) {
    const uint8_t *p = d.p;
    uint8_t b0 = p[at];
    switch (b0 >> 4) {
    case CFL_SHORT: case CFL_INT: case CFL_FLOAT: {
        int is_int;
        int64_t i;
        double x;
        if (!cfl_number(d, at, &is_int, &i, &x)) return -1;
        if (is_int) api->result_int64(ctx, i); else api->result_double(ctx, x);
        return 1;
    }
    case CFL_SPECIAL:
        if ((b0 & 0x0C) == 0 || (b0 & 0x0C) == 0x0C) cfl_result_json_null(api, ctx);
        else cfl_result_bool(api, ctx, b0 == 0x38);
        return 1;
    case CFL_STRING: case CFL_BINARY: {
        const uint8_t *s;
        size_t n;
        if (!cfl_string(d, at, &s, &n) || n > 0x7FFFFFFF) return -1;
        if ((b0 >> 4) == CFL_STRING) {
            api->result_text(ctx, n ? (const char *)s : empty_text, (int)n, SQLITE_TRANSIENT);
        } else {
            api->result_blob(ctx, n ? (const void *)s : empty_text, (int)n, SQLITE_TRANSIENT);
            api->result_subtype(ctx, CFL_SUBTYPE_DATA);
        }
        return 1;
    }
    default:
        return 0;
    }
}
