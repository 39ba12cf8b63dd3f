#ifndef CJAVASCRIPTCOREAPI_H
#define CJAVASCRIPTCOREAPI_H
/*
 * The JavaScriptCore C functions CouchbaseLiteJavaScript calls, as one table filled at run time
 * from libjavascriptcoregtk (Debian: libjavascriptcoregtk-4.1-0) with dlopen/dlsym, so the package
 * builds without JavaScriptCore's headers and a program runs without the library until it compiles
 * a JavaScript design-document function (as CSQLiteAPI does for SQLCipher).
 *
 * The types and signatures are JavaScriptCore's public C API (JSBase.h, JSContextRef.h,
 * JSObjectRef.h, JSStringRef.h, JSValueRef.h) with nullability added, and the execution time
 * limit, which libjavascriptcoregtk exports but declares only in the private JSContextRefPrivate.h.
 * No JavaScriptCore header is included: the table's field types are the only declarations.
 */
#include <stdbool.h>
#include <stddef.h>

#pragma clang assume_nonnull begin

typedef const struct OpaqueJSContextGroup *JSContextGroupRef;
typedef const struct OpaqueJSContext *JSContextRef;
typedef struct OpaqueJSContext *JSGlobalContextRef;
typedef struct OpaqueJSString *JSStringRef;
typedef struct OpaqueJSClass *JSClassRef;
typedef const struct OpaqueJSValue *JSValueRef;
typedef struct OpaqueJSValue *JSObjectRef;

/* JSObjectRef.h: a set of property attributes, ORed together. */
typedef unsigned JSPropertyAttributes;
enum {
    kJSPropertyAttributeNone = 0,
    kJSPropertyAttributeReadOnly = 1 << 1,
    kJSPropertyAttributeDontEnum = 1 << 2,
    kJSPropertyAttributeDontDelete = 1 << 3
};

/* JSObjectRef.h: a native function called from JavaScript; NULL `arguments` when there are none. */
typedef JSValueRef _Nullable (*JSObjectCallAsFunctionCallback)(JSContextRef ctx, JSObjectRef function,
    JSObjectRef _Nullable thisObject, size_t argumentCount, const JSValueRef _Nullable arguments[_Nullable],
    JSValueRef _Nullable * _Nullable exception);

/* JSContextRefPrivate.h: the watchdog that interrupts a runaway script (CouchDB's
   os_process_timeout). When it returns false the watchdog is not re-armed, so the callback re-arms it. */
typedef bool (*JSShouldTerminateCallback)(JSContextRef ctx, void * _Nullable context);

typedef struct cjsc_api {
    /* JSContextRef.h */
    JSContextGroupRef _Nonnull (* _Nonnull JSContextGroupCreate)(void);
    void (* _Nonnull JSContextGroupRelease)(JSContextGroupRef group);
    JSGlobalContextRef _Nonnull (* _Nonnull JSGlobalContextCreateInGroup)(JSContextGroupRef _Nullable group, JSClassRef _Nullable globalObjectClass);
    void (* _Nonnull JSGlobalContextRelease)(JSGlobalContextRef ctx);
    JSObjectRef _Nonnull (* _Nonnull JSContextGetGlobalObject)(JSContextRef ctx);
    /* JSContextRefPrivate.h */
    void (* _Nonnull JSContextGroupSetExecutionTimeLimit)(JSContextGroupRef group, double limit,
        JSShouldTerminateCallback _Nullable callback, void * _Nullable context);
    void (* _Nonnull JSContextGroupClearExecutionTimeLimit)(JSContextGroupRef group);
    /* JSBase.h */
    JSValueRef _Nullable (* _Nonnull JSEvaluateScript)(JSContextRef ctx, JSStringRef script, JSObjectRef _Nullable thisObject,
        JSStringRef _Nullable sourceURL, int startingLineNumber, JSValueRef _Nullable * _Nullable exception);
    /* JSObjectRef.h */
    JSValueRef _Nullable (* _Nonnull JSObjectCallAsFunction)(JSContextRef ctx, JSObjectRef object, JSObjectRef _Nullable thisObject,
        size_t argumentCount, const JSValueRef _Nullable arguments[_Nullable], JSValueRef _Nullable * _Nullable exception);
    JSValueRef _Nullable (* _Nonnull JSObjectGetProperty)(JSContextRef ctx, JSObjectRef object, JSStringRef propertyName,
        JSValueRef _Nullable * _Nullable exception);
    void (* _Nonnull JSObjectSetProperty)(JSContextRef ctx, JSObjectRef object, JSStringRef propertyName, JSValueRef value,
        JSPropertyAttributes attributes, JSValueRef _Nullable * _Nullable exception);
    JSObjectRef _Nonnull (* _Nonnull JSObjectMakeFunctionWithCallback)(JSContextRef ctx, JSStringRef _Nullable name,
        JSObjectCallAsFunctionCallback _Nullable callAsFunction);
    /* JSStringRef.h */
    JSStringRef _Nonnull (* _Nonnull JSStringCreateWithUTF8CString)(const char * _Nullable string);
    void (* _Nonnull JSStringRelease)(JSStringRef string);
    size_t (* _Nonnull JSStringGetMaximumUTF8CStringSize)(JSStringRef string);
    size_t (* _Nonnull JSStringGetUTF8CString)(JSStringRef string, char *buffer, size_t bufferSize);
    /* JSValueRef.h */
    bool (* _Nonnull JSValueIsNull)(JSContextRef ctx, JSValueRef value);
    bool (* _Nonnull JSValueIsObject)(JSContextRef ctx, JSValueRef value);
    bool (* _Nonnull JSValueIsUndefined)(JSContextRef ctx, JSValueRef value);
    JSValueRef _Nullable (* _Nonnull JSValueMakeFromJSONString)(JSContextRef ctx, JSStringRef string);
    JSValueRef _Nonnull (* _Nonnull JSValueMakeUndefined)(JSContextRef ctx);
    JSObjectRef _Nullable (* _Nonnull JSValueToObject)(JSContextRef ctx, JSValueRef value, JSValueRef _Nullable * _Nullable exception);
    JSStringRef _Nullable (* _Nonnull JSValueToStringCopy)(JSContextRef ctx, JSValueRef value, JSValueRef _Nullable * _Nullable exception);
} cjsc_api;

/// The table, loading the library on the first call (once, thread-safe): the file named by
/// CBL_JAVASCRIPTCORE_LOAD when it is set (and only that), else libjavascriptcoregtk-4.1.so.0, else
/// libjavascriptcoregtk-4.0.so.18. NULL when none loads or one lacks a function: then
/// `cjsc_api_load_error` says why.
const cjsc_api * _Nullable cjsc_api_load(void);

/// Why `cjsc_api_load` answered NULL (the dynamic loader's words, for each name tried); "" when it did not.
const char *cjsc_api_load_error(void);

/// The name the library was loaded by (a soname, or CBL_JAVASCRIPTCORE_LOAD's path); NULL when not loaded.
const char * _Nullable cjsc_api_library_name(void);

/// The file the library was loaded from, as the dynamic loader resolved it; NULL when not loaded or unknown.
const char * _Nullable cjsc_api_library_path(void);

#pragma clang assume_nonnull end

#endif
