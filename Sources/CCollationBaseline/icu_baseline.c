/*
 * Nothing to compile: `cbl_icu_strcoll_baseline` lives in CCollation, next to the shared
 * collator it uses. This target only carries its header (SwiftPM wants a source file).
 */
#include "CCollationBaseline.h"
