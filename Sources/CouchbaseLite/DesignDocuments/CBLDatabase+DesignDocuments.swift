import Crypto
import Foundation
import JSONCore

/// Design documents (`_design/NAME`) as CouchDB and 1.x's listener read them: views, filters and
/// `validate_doc_update` compiled from their source with the registered compilers.
extension CBLDatabase {
    /// The view `design/view` defined in `_design/design` (`views.view.map`, `.reduce`, `language`),
    /// compiled with ``CBLView/compiler()`` and registered under that name; nil when the design
    /// document or the view does not exist. It is recompiled when the design document's revision
    /// changes, and its index is reset when the function sources change (1.x's view version rule).
    /// Throws 501 when no compiler is registered, 500 `compilation_error`-style errors otherwise.
    public func compileDesignDocumentView(named name: String) throws -> CBLView? {
        let parts = name.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return nil }
        guard let found = try designDocument(parts[0]), let views = found.properties["views"] as? [String: Any],
              parts[1] != "lib", let definition = views[parts[1]] as? [String: Any],
              let mapSource = definition["map"] as? String else {
            return nil
        }
        let (revID, ddoc) = (found.revID, found.properties)
        let view = viewNamed(name)
        let compiledRev = lock.withLock { $0.designDocumentCache.views[name] }
        if compiledRev == revID, view.mapBlock != nil { return view }

        let language = ddoc["language"] as? String ?? "javascript"
        let reduceSource = (definition["reduce"] as? String).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        var reduce: CBLReduceBlock?
        if let reduceSource, reduceSource.hasPrefix("_") {
            guard let builtin = CBLBuiltinReducer(designDocumentSource: reduceSource) else {
                throw CBLError(400, "Builtin reduce function '\(reduceSource)' of view '\(name)' is unknown (CouchDB offers _count, _sum, _stats, _approx_count_distinct)")
            }
            reduce = builtin.failingBlock
        }
        let needsCompiler = reduce == nil && reduceSource != nil
        let library = views["lib"] as? [String: Any] ?? [:]
        guard let compiler = CBLView.compiler() else {
            throw CBLError(501, "View '\(name)' is written in \(language == "javascript" ? "JavaScript" : language) and no view compiler is registered (CBLView.setCompiler)")
        }
        let map = try compiler.compileDesignDocumentMap(mapSource, language: language, library: library)
        if needsCompiler, let reduceSource {
            reduce = try compiler.compileDesignDocumentReduce(reduceSource, language: language, library: library)
        }
        // 1.x's rule: the version is derived from the definition, so editing a function (or the
        // library it requires) discards the index; a new revision that leaves them alone keeps it.
        // The design document's `options` change what is indexed (`include_design`, `local_seq`), so
        // they are part of the version when present.
        let options = ddoc["options"] as? [String: Any]
        var versioned: [String: Any] = ["language": language, "view": definition, "lib": library]
        if let options { versioned["options"] = options }
        let definitionText = (try? JSON.data(versioned, sortedKeys: true)) ?? []
        let version = Insecure.SHA1.hash(data: definitionText).map { String(format: "%02x", $0) }.joined()
        // A view's own `options.collation` (CouchDB's place for it), else the design document's.
        let collation = (definition["options"] as? [String: Any])?["collation"] ?? options?["collation"]
        view.collation = (collation as? String) == "raw" ? .raw : .unicode
        view.designDocumentOptions = CBLView.DesignOptions(includeDesign: options?["include_design"] as? Bool ?? false,
                                                           localSeq: options?["local_seq"] as? Bool ?? false)
        guard view.setMap(map, reduce: reduce, version: version) else {
            throw CBLError(500, "View '\(name)' could not be registered")
        }
        lock.withLock { $0.designDocumentCache.views[name] = revID }
        return view
    }

    /// True if the view `name` was compiled from a design document (rather than registered in Swift).
    package func isDesignDocumentView(_ name: String) -> Bool {
        lock.withLock { $0.designDocumentCache.views[name] != nil }
    }

    /// Forgets that the view `name` came from a design document (its functions were set in Swift).
    func forgetDesignDocumentView(named name: String) {
        lock.withLock { $0.designDocumentCache.views[name] = nil }
    }

    /// The filter `design/filter` defined in `_design/design` (`filters.filter`), compiled with
    /// ``CBLDatabase/filterCompiler()``; nil when there is no compiler, design document or filter.
    /// Throws when the source does not compile.
    public func compileDesignDocumentFilter(named name: String) throws -> CBLFilterBlock? {
        let parts = name.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, let compiler = CBLDatabase.filterCompiler() else { return nil }
        guard let found = try designDocument(parts[0]),
              let source = (found.properties["filters"] as? [String: Any])?[parts[1]] as? String else { return nil }
        let (revID, ddoc) = (found.revID, found.properties)
        let cached = lock.withLock { $0.designDocumentCache.filters[name] }
        if let cached, cached.revID == revID { return cached.block }
        let language = ddoc["language"] as? String ?? "javascript"
        var whole = ddoc
        whole["_id"] = "_design/" + parts[0]
        whole["_rev"] = revID
        let block = try compiler.compileDesignDocumentFilter(source, language: language, designDocument: whole)
        let replaced = lock.withLock { $0.designDocumentCache.filters.updateValue((revID, block), forKey: name) }
        _ = replaced   // released here, after the lock
        return block
    }

    /// The filter a replication or `_changes` names: one registered with `setFilterNamed`, else a
    /// design document's (`design/filter`) when a filter compiler is registered.
    public func filterNamedOrCompiled(_ name: String) throws -> CBLFilterBlock? {
        if let registered = filterNamed(name) { return registered }
        return try compileDesignDocumentFilter(named: name)
    }

    /// The winning revision ID and properties of `_design/name`, or nil if missing or deleted.
    func designDocument(_ name: String) throws -> (revID: String, properties: [String: Any])? {
        guard let rev = try syncWinningRevision(docID: "_design/" + name), !rev.deleted,
              let properties = rev.properties else { return nil }
        return (rev.revID, properties)
    }

    // MARK: validate_doc_update

    /// Registers (or with nil, removes) a Swift function run as design document `id`'s
    /// `validate_doc_update`, with the same `userCtx` and `secObj`, in the same place among the
    /// design documents' validations (by ID), whether or not that design document exists.
    ///
    /// It replaces the document's own `validate_doc_update`, which is then neither compiled nor
    /// run, and it runs without any compiler, so a database needing only built-in rules is never
    /// refused for a rule it cannot run (`refusesWritesWithUnrunnableValidations`). The listener
    /// uses it for the `_users` database's `_design/_auth`, whose rule CouchDB builds in as well.
    package func setBuiltInValidation(_ validation: CBLDesignValidation?, forDesignDocument id: String) {
        let replaced = lock.withLock { s -> (CBLDesignValidation?, DesignDocumentCache) in
            let old = validation.map { s.builtInValidations.updateValue($0, forKey: id) }
                ?? s.builtInValidations.removeValue(forKey: id)
            s.builtInValidationsGeneration &+= 1
            let stale = s.designDocumentCache
            s.designDocumentCache.validations = nil
            s.designDocumentCache.validateFunctionCount = nil
            return (old, stale)
        }
        _ = replaced   // released here, after the lock
    }

    /// The IDs of the database's design documents (deleted ones included; `designDocument`
    /// answers nil for those).
    private func designDocumentIDs() -> [String] {
        (try? read { try $0.designDocumentIDs() }) ?? []
    }

    /// The design documents' IDs and those of the built-in validations, in the order the store
    /// lists design documents (SQLite's binary order: UTF-8 bytes).
    private func validationDocumentIDs(builtIns: [String: CBLDesignValidation]) -> [String] {
        let stored = designDocumentIDs()
        if builtIns.isEmpty { return stored }
        let ids = Set(stored).union(builtIns.keys)
        return ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// True when no design document has a `validate_doc_update` and no built-in one is
    /// registered: known from a look at the design documents made once per change to them, so a
    /// save (the bulk insert's hot path) answers it with one lock instead of looking up the compilers.
    private func hasNoValidateFunctions() -> Bool {
        if let known = lock.withLock({ $0.designDocumentCache.validateFunctionCount }) { return known == 0 }
        let (builtIns, generation) = lock.withLock { ($0.builtInValidations, $0.builtInValidationsGeneration) }
        let count = designDocumentIDs().reduce(builtIns.count) { count, id in
            if builtIns[id] != nil { return count }   // counted already: it stands for the document's own
            let found = try? designDocument(String(id.dropFirst("_design/".count)))
            return count + (found?.properties["validate_doc_update"] is String ? 1 : 0)
        }
        lock.withLock { s in
            if s.builtInValidationsGeneration == generation { s.designDocumentCache.validateFunctionCount = count }
        }
        return count == 0
    }

    /// One validation block running every design document's `validate_doc_update` (a built-in one
    /// instead of the document's own where one is registered), or nil when there is none. Compiled
    /// once per set of design document revisions. Without a filter compiler the documents' own are
    /// not run (1.x never ran them: an app's own rules are `setValidationNamed`), unless the manager
    /// refuses such writes (the listener, where a CouchDB client relies on them): then each write
    /// is refused, naming the design document. Built-in ones always run.
    ///
    /// The block passes the current ``CBLRequestUser`` (`userCtx` with its name and roles, `secObj`
    /// its database's `_security`), or without one CouchDB's admin party (`"roles": ["_admin"]`).
    func designDocumentValidation() -> CBLValidationBlock? {
        if hasNoValidateFunctions() { return nil }
        let compiler = CBLDatabase.filterCompiler()
        let runsDocumentFunctions = compiler != nil || manager.refusesWritesWithUnrunnableValidations
        let (cached, builtIns, generation) = lock.withLock { s in
            (s.designDocumentCache.validationsCompiled == (compiler != nil) ? s.designDocumentCache.validations : nil,
             s.builtInValidations, s.builtInValidationsGeneration)
        }
        var validations = cached
        if !runsDocumentFunctions {
            // Only the built-in ones run, in the order of their IDs: nothing to read, compile or cache.
            validations = builtIns.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { (docID: $0.key, validate: $0.value) }
        } else if validations == nil {
            var compiled: [(docID: String, validate: CBLDesignValidation)] = []
            for id in validationDocumentIDs(builtIns: builtIns) {
                if let builtIn = builtIns[id] {
                    compiled.append((id, builtIn))
                    continue
                }
                guard let found = try? designDocument(String(id.dropFirst("_design/".count))),
                      let source = found.properties["validate_doc_update"] as? String else { continue }
                let (revID, ddoc) = (found.revID, found.properties)
                var whole = ddoc
                whole["_id"] = id
                whole["_rev"] = revID
                let language = ddoc["language"] as? String ?? "javascript"
                guard let compiler else {
                    compiled.append((id, Self.refusingValidation(designDocumentID: id, language: language)))
                    continue
                }
                do {
                    if let validate = try compiler.compileValidateDocUpdate(source, language: language, designDocument: whole) {
                        compiled.append((id, validate))
                    }
                } catch let error as CBLDesignFunctionError where error.kind == .noCompiler {
                    // The compiler cannot run at all here (JavaScriptCore is not installed): every
                    // write is refused with its reason, as with no compiler, not as a bad source.
                    compiled.append((id, { _, _, _, _ in throw error }))
                } catch {
                    // A validation that does not compile refuses every write but to design
                    // documents (so it can be fixed); CouchDB refuses to save it in the first place.
                    let message = (error as? CBLDesignFunctionError)?.message ?? (error as? CBLError)?.message ?? "\(error)"
                    let failure = CBLDesignFunctionError(.compilation, "validate_doc_update of \(id) does not compile: \(message)")
                    compiled.append((id, { _, _, _, _ in throw failure }))
                }
            }
            validations = compiled
            let replaced = lock.withLock { s -> [(docID: String, validate: CBLDesignValidation)]? in
                // Compiled from built-in validations since replaced: used for this save, not kept.
                guard s.builtInValidationsGeneration == generation else { return nil }
                defer {
                    s.designDocumentCache.validations = compiled
                    s.designDocumentCache.validationsCompiled = compiler != nil
                }
                return s.designDocumentCache.validations
            }
            _ = replaced   // released here, after the lock
        }
        guard let validations, !validations.isEmpty else { return nil }
        let dbName = name
        return { newRevision, context in
            // CouchDB never runs validate_doc_update on a design document (only database admins
            // write those, checked before): a rule can always be removed or fixed.
            if newRevision.document.documentID.hasPrefix("_design/") { return }
            let newDoc = newRevision.properties ?? [:]
            let oldDoc = context.currentRevision?.properties
            // The writing user, on the thread making the save; without one (the app, a listener
            // without user accounts) every write acts as CouchDB's admin party.
            let user = CBLRequestUser.current
            let userCtx: [String: Any] = user?.validationUserContext(databaseName: dbName)
                ?? ["db": dbName, "name": NSNull(), "roles": ["_admin"]]
            let secObj: [String: Any] = user?.validationSecurityObject ?? [:]
            for (_, validate) in validations {
                do {
                    try validate(newDoc, oldDoc, userCtx, secObj)
                } catch let error as CBLDesignFunctionError {
                    context.reject(error: error)
                    return
                } catch {
                    let e = error as? CBLError ?? CBLError(500, "\(error)")
                    context.reject(status: e.code, message: e.message)
                    return
                }
            }
        }
    }

    /// Stands for a `validate_doc_update` no registered compiler can run: refuses every write
    /// (CouchDB's `unknown_query_language`), so a rule is never silently skipped.
    private static func refusingValidation(designDocumentID id: String, language: String) -> CBLDesignValidation {
        let why = language == "javascript"
            ? "JavaScript is disabled on this listener (cbl serve --no-javascript)"
            : "no compiler for the language '\(language)' is registered"
        let message = "\(id) has a validate_doc_update function and \(why): writes to this database are refused "
            + "rather than accepted unchecked (remove or change \(id), or serve with JavaScript enabled)"
        return { _, _, _, _ in throw CBLDesignFunctionError(.noCompiler, message) }
    }
}
