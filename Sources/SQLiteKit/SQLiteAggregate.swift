import CSQLite
import CSQLiteAPI

/// The running state of one evaluation of an application-defined aggregate SQL function
/// (one per group): `step` sees each row's arguments, `finish` sets the result.
package protocol SQLiteAggregateState: AnyObject {
    func step(_ arguments: SQLiteArguments)
    func finish(_ result: SQLiteFunctionResult)
}

private final class AggregateBox {
    let makeState: () -> SQLiteAggregateState
    init(_ makeState: @escaping () -> SQLiteAggregateState) { self.makeState = makeState }
}

/// The state of the group `context` is aggregating, created on first use and kept in
/// SQLite's per-group aggregate memory as a retained reference.
private func aggregateState(_ api: UnsafePointer<csqlite_api>, _ context: OpaquePointer?, create: Bool) -> SQLiteAggregateState? {
    let size = create ? Int32(MemoryLayout<UnsafeMutableRawPointer?>.size) : 0
    guard let slot = api.pointee.aggregate_context(context, size)?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self) else {
        return nil
    }
    if let p = slot.pointee { return Unmanaged<AnyObject>.fromOpaque(p).takeUnretainedValue() as? SQLiteAggregateState }
    guard create else { return nil }
    let box = Unmanaged<AggregateBox>.fromOpaque(api.pointee.user_data(context)!).takeUnretainedValue()
    let state = box.makeState()
    slot.pointee = Unmanaged.passRetained(state as AnyObject).toOpaque()
    return state
}

@inline(__always)
private func aggregateStep(_ api: UnsafePointer<csqlite_api>, _ context: OpaquePointer?, _ argc: Int32,
                           _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
    aggregateState(api, context, create: true)?.step(SQLiteArguments(api: api, argv: argv, count: Int(argc)))
}

@inline(__always)
private func aggregateFinal(_ api: UnsafePointer<csqlite_api>, _ context: OpaquePointer?) {
    let result = SQLiteFunctionResult(api: api, context: context)
    if let slot = api.pointee.aggregate_context(context, 0)?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self),
       let p = slot.pointee {
        // Taken back (released) here: SQLite frees the slot itself after xFinal.
        let state = Unmanaged<AnyObject>.fromOpaque(p).takeRetainedValue() as? SQLiteAggregateState
        slot.pointee = nil
        state?.finish(result)
    } else {
        // No rows in the group.
        let box = Unmanaged<AggregateBox>.fromOpaque(api.pointee.user_data(context)!).takeUnretainedValue()
        box.makeState().finish(result)
    }
}

extension SQLiteConnection {
    /// Registers the aggregate SQL function `name`: `makeState` makes a fresh state for each
    /// group, which sees every row through `step` and sets the group's result in `finish`.
    package func createAggregate(_ name: String, argumentCount: Int32, readsSubtypes: Bool = false,
                                _ makeState: @escaping () -> SQLiteAggregateState) throws {
        var flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
        if readsSubtypes { flags |= SQLITE_SUBTYPE }
        let box = Unmanaged.passRetained(AggregateBox(makeState)).toOpaque()
        // A C callback captures nothing, so the library is chosen by registering its own thunks.
        let isCipher = api.pointee.is_sqlcipher != 0
        let step: SQLiteFunctionCallback = isCipher
            ? { context, argc, argv in aggregateStep(SQLiteLibrary.callbackSQLCipherAPI, context, argc, argv) }
            : { context, argc, argv in aggregateStep(SQLiteLibrary.callbackSystemAPI, context, argc, argv) }
        let final: @convention(c) (OpaquePointer?) -> Void = isCipher
            ? { context in aggregateFinal(SQLiteLibrary.callbackSQLCipherAPI, context) }
            : { context in aggregateFinal(SQLiteLibrary.callbackSystemAPI, context) }
        let rc = api.pointee.create_function_v2(
            handle, name, argumentCount, flags, box, nil, step, final,
            { p in if let p { Unmanaged<AggregateBox>.fromOpaque(p).release() } })
        if rc != SQLITE_OK { throw error(rc, sql: nil) }
    }
}
