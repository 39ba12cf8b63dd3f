import CSQLite
import CSQLiteAPI
import Foundation

/// The rows a table-valued function produced for one set of arguments.
package protocol SQLiteTableRows: AnyObject {
    var count: Int { get }
    /// Sets `result` to column `column` (0-based, visible columns only) of row `row`.
    func column(_ column: Int, row: Int, into result: SQLiteFunctionResult)
}

/// A Swift closure implementing a table-valued function: arguments in, rows out.
package typealias SQLiteTableFunction = (SQLiteArguments) -> SQLiteTableRows

private final class TableFunctionBox {
    let columns: [String]
    let argumentCount: Int
    let body: SQLiteTableFunction
    /// The library of the connection the function is registered on.
    let api: UnsafePointer<csqlite_api>
    init(columns: [String], argumentCount: Int, api: UnsafePointer<csqlite_api>, body: @escaping SQLiteTableFunction) {
        self.api = api
        self.columns = columns
        self.argumentCount = argumentCount
        self.body = body
    }
}

private final class TableCursorState {
    var rows: SQLiteTableRows?
    var position = 0
}

// The vtab and cursor structs SQLite hands back are allocated with a trailing pointer slot
// holding the Swift object (C layout guaranteed, unlike a Swift struct's).
private let vtabSize = MemoryLayout<sqlite3_vtab>.stride
private let cursorSize = MemoryLayout<sqlite3_vtab_cursor>.stride

private func box(of vtab: UnsafeMutablePointer<sqlite3_vtab>) -> TableFunctionBox {
    let slot = UnsafeMutableRawPointer(vtab).advanced(by: vtabSize).load(as: UnsafeMutableRawPointer.self)
    return Unmanaged<TableFunctionBox>.fromOpaque(slot).takeUnretainedValue()
}

private func state(of cursor: UnsafeMutablePointer<sqlite3_vtab_cursor>?) -> TableCursorState {
    let slot = UnsafeMutableRawPointer(cursor!).advanced(by: cursorSize).load(as: UnsafeMutableRawPointer.self)
    return Unmanaged<TableCursorState>.fromOpaque(slot).takeUnretainedValue()
}

nonisolated(unsafe) private var tableFunctionModule: sqlite3_module = {
    var m = sqlite3_module()
    m.iVersion = 0
    m.xCreate = nil   // eponymous-only: usable as `name(args…)` in FROM, never CREATE VIRTUAL TABLE
    m.xConnect = { db, aux, _, _, vtabOut, _ in
        let b = Unmanaged<TableFunctionBox>.fromOpaque(aux!).takeUnretainedValue()
        var columns = b.columns.map { "\"\($0)\"" }
        for i in 0..<b.argumentCount { columns.append("_arg\(i) HIDDEN") }
        let rc = b.api.pointee.declare_vtab(db, "CREATE TABLE x(\(columns.joined(separator: ", ")))")
        if rc != SQLITE_OK { return rc }
        let raw = UnsafeMutableRawPointer.allocate(byteCount: vtabSize + 8, alignment: 8)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: vtabSize)
        raw.advanced(by: vtabSize).storeBytes(of: aux!, as: UnsafeMutableRawPointer.self)
        vtabOut!.pointee = raw.assumingMemoryBound(to: sqlite3_vtab.self)
        return SQLITE_OK
    }
    m.xBestIndex = { vtab, info in
        let b = box(of: vtab!)
        let info = info!
        let firstArg = Int32(b.columns.count)
        var seen = 0
        for i in 0..<Int(info.pointee.nConstraint) {
            let c = info.pointee.aConstraint[i]
            let arg = Int(c.iColumn - firstArg)
            guard arg >= 0, c.op == SQLITE_INDEX_CONSTRAINT_EQ else { continue }
            if c.usable == 0 { return SQLITE_CONSTRAINT }
            info.pointee.aConstraintUsage[i].argvIndex = Int32(arg + 1)
            info.pointee.aConstraintUsage[i].omit = 1
            seen |= 1 << arg
        }
        // Only trailing arguments may be left out (they are then NULL).
        guard seen & 1 != 0 || b.argumentCount == 0 else { return SQLITE_CONSTRAINT }
        info.pointee.idxNum = Int32(seen)
        info.pointee.estimatedCost = 10
        info.pointee.estimatedRows = 10
        return SQLITE_OK
    }
    m.xDisconnect = { vtab in
        UnsafeMutableRawPointer(vtab!).deallocate()
        return SQLITE_OK
    }
    m.xDestroy = m.xDisconnect
    m.xOpen = { _, cursorOut in
        let raw = UnsafeMutableRawPointer.allocate(byteCount: cursorSize + 8, alignment: 8)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: cursorSize)
        raw.advanced(by: cursorSize).storeBytes(of: Unmanaged.passRetained(TableCursorState()).toOpaque(), as: UnsafeMutableRawPointer.self)
        cursorOut!.pointee = raw.assumingMemoryBound(to: sqlite3_vtab_cursor.self)
        return SQLITE_OK
    }
    m.xClose = { cursor in
        let raw = UnsafeMutableRawPointer(cursor!)
        Unmanaged<TableCursorState>.fromOpaque(raw.advanced(by: cursorSize).load(as: UnsafeMutableRawPointer.self)).release()
        raw.deallocate()
        return SQLITE_OK
    }
    m.xFilter = { cursor, idxNum, _, argc, argv in
        let s = state(of: cursor)
        let b = box(of: cursor!.pointee.pVtab)
        s.rows = b.body(SQLiteArguments(api: b.api, argv: argv, count: Int(argc)))
        s.position = 0
        _ = idxNum
        return SQLITE_OK
    }
    m.xNext = { cursor in
        state(of: cursor).position += 1
        return SQLITE_OK
    }
    m.xEof = { cursor in
        let s = state(of: cursor)
        return s.position >= (s.rows?.count ?? 0) ? 1 : 0
    }
    m.xColumn = { cursor, context, column in
        let s = state(of: cursor)
        let b = box(of: cursor!.pointee.pVtab)
        if Int(column) < b.columns.count, let rows = s.rows {
            rows.column(Int(column), row: s.position, into: SQLiteFunctionResult(api: b.api, context: context))
        } else {
            b.api.pointee.result_null(context)
        }
        return SQLITE_OK
    }
    m.xRowid = { cursor, rowid in
        rowid!.pointee = sqlite3_int64(state(of: cursor).position)
        return SQLITE_OK
    }
    return m
}()

extension SQLiteConnection {
    /// Registers the table-valued function `name(arg0, …)` with visible `columns`, usable in
    /// FROM/JOIN like SQLite's `json_each`. Arguments not given are NULL.
    package func createTableFunction(_ name: String, columns: [String], argumentCount: Int,
                                    _ body: @escaping SQLiteTableFunction) throws {
        let b = Unmanaged.passRetained(TableFunctionBox(columns: columns, argumentCount: argumentCount, api: api, body: body)).toOpaque()
        let rc = withUnsafePointer(to: &tableFunctionModule) { module in
            api.pointee.create_module_v2(handle, name, module, b) { p in
                if let p { Unmanaged<TableFunctionBox>.fromOpaque(p).release() }
            }
        }
        if rc != SQLITE_OK { throw error(rc, sql: nil) }
    }
}
