#ifndef CJAVASCRIPTCORE_SHIM_H
#define CJAVASCRIPTCORE_SHIM_H
#include <JavaScriptCore/JavaScript.h>
#include <stdbool.h>

/* Exported by libjavascriptcoregtk but declared only in the private JSContextRefPrivate.h:
 * the watchdog that interrupts a runaway script (CouchDB's os_process_timeout). When the
 * callback returns false the watchdog is not re-armed, so the caller re-arms it from there. */
typedef bool (*JSShouldTerminateCallback)(JSContextRef ctx, void *context);
void JSContextGroupSetExecutionTimeLimit(JSContextGroupRef group, double limit,
                                         JSShouldTerminateCallback callback, void *context);
void JSContextGroupClearExecutionTimeLimit(JSContextGroupRef group);
#endif
