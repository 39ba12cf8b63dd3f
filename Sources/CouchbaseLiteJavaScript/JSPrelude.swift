/// The JavaScript every sandbox starts with: CouchDB's query-server globals (`emit`, `log`,
/// `sum`, `toJSON`, `isArray`, `require`) and the entry points Swift calls. Every entry point
/// takes one JSON value and answers JSON text (or null), so each call crosses the boundary once.
enum JSPrelude {
    static let source = #"""
    var __rows = null, __fn = null, __root = {}, __cache = {}, __makeRequire, __compile;
    // Only the prelude evaluates source text (compiling the function, CommonJS modules), through
    // `evaluate`, which no other code can reach; the functions it runs cannot (CouchDB's
    // sandbox: no eval, no Function constructor).
    function emit(key, value) {
      if (__rows === null) throw new Error('emit() is only available in map functions');
      __rows.push(key === undefined ? null : key, value === undefined ? null : value);
    }
    function log(message) {
      if (typeof message != 'string') { try { message = JSON.stringify(message); } catch (e) { message = String(message); } }
      __nativeLog(String(message));
    }
    function sum(values) { var s = 0; for (var i = 0; i < values.length; i++) s += values[i]; return s; }
    function toJSON(value) { return JSON.stringify(value); }
    function isArray(value) { return Array.isArray(value); }
    function __describe(e) {
      try {
        if (e instanceof Error) return String(e);
        if (typeof e == 'string') return e;
        return JSON.stringify(e);
      } catch (x) { return String(e); }
    }
    (function (evaluate) {
    // CommonJS modules kept in the design document: ids are paths from its root
    // ('views/lib/foo'), or relative to the requiring module ('./foo', '../bar').
    __makeRequire = function (dir) {
      return function (id) {
        if (typeof id != 'string') throw new Error('require() needs a module path string');
        var segments = id.charAt(0) == '.' ? dir.slice() : [];
        var parts = id.split('/');
        for (var i = 0; i < parts.length; i++) {
          var p = parts[i];
          if (p == '' || p == '.') continue;
          if (p == '..') {
            if (segments.length == 0) throw new Error("require('" + id + "'): the path leaves the design document");
            segments.pop();
          } else segments.push(p);
        }
        var key = segments.join('/');
        if (Object.prototype.hasOwnProperty.call(__cache, key)) return __cache[key].exports;
        var node = __root;
        for (var j = 0; j < segments.length; j++) {
          if (node === null || typeof node != 'object' || !Object.prototype.hasOwnProperty.call(node, segments[j]))
            throw new Error("require('" + id + "'): no module at '" + key + "'");
          node = node[segments[j]];
        }
        if (typeof node != 'string') throw new Error("require('" + id + "'): '" + key + "' is not a JavaScript string");
        var module = { id: key, exports: {} };
        __cache[key] = module;
        var body = evaluate('(function (module, exports, require) {' + node + '\n})');
        try { body(module, module.exports, __makeRequire(segments.slice(0, -1))); }
        catch (e) { delete __cache[key]; throw e; }
        return module.exports;
      };
    };
    __compile = function (args) {
      __root = args[1]; __cache = {};
      var source = args[0].replace(/[\s;]+$/, '');
      var f;
      try { f = evaluate('(' + source + '\n)'); }
      catch (e) { return 'Compilation failed: ' + __describe(e); }
      if (typeof f != 'function') return 'Expression does not eval to a function. (' + args[0] + ')';
      __fn = f;
      return null;
    };
    // The functions the prelude compiles cannot evaluate text: eval, Function and the
    // constructors of generator and async functions refuse.
    (function () {
      function refuse() { throw new EvalError('Code generation from strings disallowed for this context'); }
      var prototypes = [Function.prototype];
      try { prototypes.push(Object.getPrototypeOf(function* () {})); } catch (e) {}
      try { prototypes.push(Object.getPrototypeOf(evaluate('(async function () {})'))); } catch (e) {}
      try { prototypes.push(Object.getPrototypeOf(evaluate('(async function* () {})'))); } catch (e) {}
      for (var i = 0; i < prototypes.length; i++)
        Object.defineProperty(prototypes[i], 'constructor', { value: refuse, writable: false, configurable: false });
      refuse.prototype = Function.prototype;
      Object.defineProperty(globalThis, 'Function', { value: refuse, writable: false, configurable: false });
      Object.defineProperty(globalThis, 'eval', { value: refuse, writable: false, configurable: false });
    })();
    })((0, eval));
    var require = __makeRequire([]);
    // The rows as one text: each key and value as JSON on its own line (JSON text never holds a
    // raw newline), so Swift takes them apart without parsing them.
    function __map(doc) {
      var rows = __rows = [];
      try { __fn(doc); } finally { __rows = null; }
      var out = '';
      for (var i = 0; i < rows.length; i++) {
        var text = JSON.stringify(rows[i]);
        out += (text === undefined ? 'null' : text) + '\n';
      }
      return out;
    }
    function __reduce(args) {
      var keys = args[2] ? null : args[0].map(function (k) { return [k, null]; });
      var result = __fn(keys, args[1], args[2]);
      return JSON.stringify(result === undefined ? null : result);
    }
    function __filter(args) { return __fn(args[0], args[1]) ? 'true' : 'false'; }
    function __validate(args) {
      try { __fn(args[0], args[1], args[2], args[3]); return null; }
      catch (e) {
        if (e !== null && typeof e == 'object') {
          if ('forbidden' in e) return JSON.stringify([403, typeof e.forbidden == 'string' ? e.forbidden : JSON.stringify(e.forbidden)]);
          if ('unauthorized' in e) return JSON.stringify([401, typeof e.unauthorized == 'string' ? e.unauthorized : JSON.stringify(e.unauthorized)]);
        }
        throw e;
      }
    }
    """#
}
