/*
 * Shared between the unicodesn tokenizer and its stemmer (not part of the module's API).
 */
#ifndef FULLTEXT_INTERNAL_H
#define FULLTEXT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Snowball English stem of the code points w[0..len), in place; w must have room for len + 2
 * code points. Returns the stem's length. */
int cbl_english_stem_codepoints(uint32_t *w, int len);

/* UTF-8 decoding and encoding of one code point (invalid input decodes as U+FFFD). */
uint32_t cbl_utf8_read(const unsigned char **p, const unsigned char *end);
size_t cbl_utf8_write(uint32_t c, unsigned char *out);

#endif /* FULLTEXT_INTERNAL_H */
