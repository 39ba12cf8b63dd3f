/*
 * CCollationBaseline: ICU's own string comparison, with no JSON parsing and no ASCII fast
 * path, for the collation benchmark and the collation tests to measure and check CCollation
 * against. Its own module so that no product's public header declares it; the function is
 * defined in CCollation (collate_strings.c), on the shared collator the collations use.
 */
#ifndef CCOLLATIONBASELINE_H
#define CCOLLATIONBASELINE_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/// ucol_strcollUTF8 on CCollation's shared collator (UTF-8, already unescaped); -1/0/1.
/// Byte order when ICU has no collator data.
int cbl_icu_strcoll_baseline(const char *a, size_t aLen, const char *b, size_t bLen);
#ifdef __cplusplus
}
#endif
#endif /* CCOLLATIONBASELINE_H */
