#define _GNU_SOURCE
#include "CJavaScriptCoreAPI.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOR_EACH_FUNCTION(X) \
    X(JSContextGroupCreate) X(JSContextGroupRelease) X(JSGlobalContextCreateInGroup) X(JSGlobalContextRelease) \
    X(JSContextGetGlobalObject) X(JSContextGroupSetExecutionTimeLimit) X(JSContextGroupClearExecutionTimeLimit) \
    X(JSEvaluateScript) X(JSObjectCallAsFunction) X(JSObjectGetProperty) X(JSObjectSetProperty) \
    X(JSObjectMakeFunctionWithCallback) X(JSStringCreateWithUTF8CString) X(JSStringRelease) \
    X(JSStringGetMaximumUTF8CStringSize) X(JSStringGetUTF8CString) X(JSValueIsNull) X(JSValueIsObject) \
    X(JSValueIsUndefined) X(JSValueMakeFromJSONString) X(JSValueMakeUndefined) X(JSValueToObject) \
    X(JSValueToStringCopy)

/* Debian's sonames: 4.1 (WebKitGTK for GTK 3 with libsoup 3, current) and 4.0 (libsoup 2, older
   releases). The C API the table uses is the same in both. */
static const char *const sonames[] = { "libjavascriptcoregtk-4.1.so.0", "libjavascriptcoregtk-4.0.so.18" };

static cjsc_api api;
static const cjsc_api *result;
static const char *library_name;
static char library_path[4096];
static char error[1024];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void append_error(const char *text) {
    size_t used = strlen(error);
    if (used + 1 >= sizeof error) return;
    snprintf(error + used, sizeof error - used, "%s%s", used > 0 ? "; " : "", text);
}

/* Fills the table from `lib`; 0 (and the missing name in `error`) when a function is absent. */
static int fill(void *lib, const char *name) {
#define SET(fn) \
    *(void **)(&api.fn) = dlsym(lib, #fn); \
    if (api.fn == NULL) { \
        char why[512]; \
        snprintf(why, sizeof why, "%s is not a usable JavaScriptCore library: %s is missing", name, #fn); \
        append_error(why); \
        return 0; \
    }
    FOR_EACH_FUNCTION(SET)
#undef SET
    return 1;
}

static void load(void) {
    const char *chosen = getenv("CBL_JAVASCRIPTCORE_LOAD");
    const char *const *names = sonames;
    size_t count = sizeof sonames / sizeof sonames[0];
    if (chosen != NULL && *chosen != 0) {
        names = &chosen;
        count = 1;
    }
    for (size_t i = 0; i < count; i++) {
        /* RTLD_LOCAL: nothing else in the process should bind to JavaScriptCore's (or its
           dependencies') symbols by accident; the table is the only way in. Never closed: sandboxes
           and their callbacks may live until exit. */
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            const char *why = dlerror();
            append_error(why != NULL ? why : names[i]);
            continue;
        }
        if (!fill(lib, names[i])) {
            dlclose(lib);
            continue;
        }
        Dl_info info;
        if (dladdr(*(void **)(&api.JSContextGroupCreate), &info) != 0 && info.dli_fname != NULL) {
            snprintf(library_path, sizeof library_path, "%s", info.dli_fname);
        }
        library_name = names[i];
        error[0] = 0;
        result = &api;
        return;
    }
}

const cjsc_api *cjsc_api_load(void) {
    pthread_once(&once, load);
    return result;
}

const char *cjsc_api_load_error(void) {
    pthread_once(&once, load);
    return error;
}

const char *cjsc_api_library_name(void) {
    pthread_once(&once, load);
    return library_name;
}

const char *cjsc_api_library_path(void) {
    pthread_once(&once, load);
    return library_path[0] != 0 ? library_path : NULL;
}
