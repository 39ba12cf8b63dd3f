import Foundation

/// Maps documents to ``CBLModel`` subclasses by their `type` property (1.x `CBLModelFactory`).
///
/// Every database has its own factory (`database.modelFactory`); types it does not know are
/// looked up in ``sharedInstance()``. Register each model class once, when the app starts:
///
/// ```swift
/// db.modelFactory?.registerClass(TodoList.self, forDocumentType: "list")
/// db.modelFactory?.registerClass(TodoTask.self, forDocumentType: "task")
/// let model = CBLModel.modelForDocument(doc)     // a TodoTask if doc["type"] == "task"
/// ```
///
/// Safe to use from any thread.
open class CBLModelFactory: NSObject {
    private let lock = NSLock()
    private var classesByType: [String: CBLModel.Type] = [:]
    private var classNamesByType: [String: String] = [:]

    nonisolated(unsafe) private static let shared = CBLModelFactory()

    /// The factory every database falls back on for types its own factory does not know.
    open class func sharedInstance() -> CBLModelFactory { shared }

    /// Creates an empty factory (to share between databases, or to subclass).
    public override init() {
        super.init()
    }

    /// Instantiates `modelClass` for documents whose `type` is `type`.
    open func registerClass(_ modelClass: CBLModel.Type, forDocumentType type: String) {
        lock.lock(); defer { lock.unlock() }
        classesByType[type] = modelClass
        classNamesByType[type] = nil
    }

    /// Instantiates the class named `className` for documents whose `type` is `type`. On Linux
    /// a Swift class is found by its module-qualified name (`"MyApp.TodoTask"`).
    open func registerClass(_ className: String, forDocumentType type: String) {
        lock.lock(); defer { lock.unlock() }
        classNamesByType[type] = className
        classesByType[type] = nil
    }

    /// The model class registered for a document type (here, else in the shared factory).
    open func classForDocumentType(_ type: String) -> CBLModel.Type? {
        lock.lock()
        let registered = classesByType[type]
        let name = classNamesByType[type]
        lock.unlock()
        if let registered { return registered }
        if let name {
            guard let found = NSClassFromString(name) as? CBLModel.Type else {
                CBLLog.warning("Model", "CBLModelFactory: no CBLModel class named \(name) (use the module-qualified name)")
                return nil
            }
            return found
        }
        return self === Self.shared ? nil : Self.shared.classForDocumentType(type)
    }

    /// The model class for a document: the class registered for its `type` property.
    /// Override to choose by other properties (or by document ID).
    open func classForDocument(_ document: CBLDocument) -> CBLModel.Type? {
        guard let type = document.property(forKey: "type") as? String else { return nil }
        return classForDocumentType(type)
    }

    /// The document's model: the one it already has, else a new instance of the class registered
    /// for its type; nil if no class is registered for it (1.x `modelForDocument:`).
    open func model(for document: CBLDocument) -> CBLModel? {
        if let existing = document.modelObject as? CBLModel { return existing }
        return classForDocument(document)?.modelForDocument(document)
    }

    /// 1.x spelling of ``model(for:)``.
    public func modelForDocument(_ document: CBLDocument) -> CBLModel? { model(for: document) }

    /// The document types registered for a model class.
    open func documentTypes(for modelClass: CBLModel.Type) -> [String] {
        lock.lock(); defer { lock.unlock() }
        let byClass = classesByType.filter { $0.value == modelClass }.map(\.key)
        if !byClass.isEmpty { return byClass.sorted() }
        let fullName = String(reflecting: modelClass)
        return classNamesByType.filter { $0.value == fullName || $0.value == String(describing: modelClass) }.map(\.key).sorted()
    }

    /// The document type registered for a model class, if exactly one is. New models of that class
    /// get it as their `type` (`X(forNewDocumentIn:)`).
    open func documentType(for modelClass: CBLModel.Type) -> String? {
        let types = documentTypes(for: modelClass)
        if types.count == 1 { return types[0] }
        return types.isEmpty && self !== Self.shared ? Self.shared.documentType(for: modelClass) : nil
    }
}

/// A database's model state: its factory, the models with unsaved changes (held strongly until
/// saved, as 1.x did), and the queue autosaves run on.
// @unchecked because `factory` and `unsaved` are only touched under `lock`.
final class ModelRegistry: @unchecked Sendable {
    /// Guards the fields below, and serialises looking up and creating a document's model (so a
    /// document gets one model even when two threads ask at once). Recursive: creating a model runs
    /// app code (`awakeFromInitializer`) that may look up other models.
    let lock = NSRecursiveLock()
    private var factory: CBLModelFactory? = CBLModelFactory()
    private var unsaved: [ObjectIdentifier: CBLModel] = [:]
    /// Autosaves run here, after the model's `autosaveDelay` (Linux has no run loop to defer to).
    let autosaveQueue = DispatchQueue(label: "CouchbaseLite.CBLModel.autosave")

    var modelFactory: CBLModelFactory? {
        get { lock.lock(); defer { lock.unlock() }; return factory }
        set { lock.lock(); factory = newValue; lock.unlock() }
    }

    func setUnsaved(_ model: CBLModel, _ isUnsaved: Bool) {
        lock.lock(); defer { lock.unlock() }
        unsaved[ObjectIdentifier(model)] = isUnsaved ? model : nil
    }

    var unsavedModels: [CBLModel] {
        lock.lock(); defer { lock.unlock() }
        return Array(unsaved.values)
    }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock(); defer { lock.unlock() }
        return try body()
    }
}

extension CBLDatabase {
    var modelRegistry: ModelRegistry {
        lock.withLock { s in
            if let registry = s.modelRegistry { return registry }
            let registry = ModelRegistry()
            s.modelRegistry = registry
            return registry
        }
    }

    /// The factory that maps this database's documents to model classes by their `type`
    /// (`db.modelFactory?.registerClass(TodoTask.self, forDocumentType: "task")`). Each database
    /// has its own; set another to share one between databases, or nil to use only the shared one.
    public var modelFactory: CBLModelFactory? {
        get { modelRegistry.modelFactory }
        set { modelRegistry.modelFactory = newValue }
    }

    /// The models of this database that have unsaved changes.
    public var unsavedModels: [CBLModel] { modelRegistry.unsavedModels }

    /// Saves every model of this database that has unsaved changes, in one transaction.
    public func saveAllModels() throws {
        try CBLModel.saveModels(unsavedModels)
    }

    /// Runs the pending autosaves now: saves, in one transaction, the models with unsaved changes
    /// whose `autosaves` is true. Call it before closing the database: an autosave scheduled after
    /// the database closed fails (1.x on iOS called it when the app went to the background).
    public func autosaveAllModels() throws {
        try CBLModel.saveModels(unsavedModels.filter(\.autosaves))
    }

    /// Model lookup for a document of this database: the factory's class, else the shared factory's.
    func modelClass(for document: CBLDocument) -> CBLModel.Type? {
        (modelFactory ?? CBLModelFactory.sharedInstance()).classForDocument(document)
    }
}
