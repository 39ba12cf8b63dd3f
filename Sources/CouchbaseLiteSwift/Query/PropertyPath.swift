import Fleece

/// A property path as LiteCore writes it: `a.b[0].c`, `\` escaping `.`, `[`, `$` and `\`
/// (spec 9.1). The translator passes these strings to `fl_value`.
struct PropertyPath: Equatable {
    enum Component: Equatable {
        case key(String)
        case index(Int)
    }

    var components: [Component]

    init(_ components: [Component]) { self.components = components }

    /// Parses a path string; a leading `$.` or `.` is ignored.
    init(parsing text: String) throws {
        var comps: [Component] = []
        var chars = Array(text)
        if chars.first == "$", chars.count > 1, chars[1] == "." { chars.removeFirst(2) }
        if chars.first == "." { chars.removeFirst() }
        var i = 0
        var key = ""
        var haveKey = false
        func flush() {
            if haveKey || !key.isEmpty { comps.append(.key(key)) }
            key = ""; haveKey = false
        }
        while i < chars.count {
            let c = chars[i]
            switch c {
            case "\\":
                i += 1
                if i < chars.count { key.append(chars[i]); haveKey = true }
            case ".":
                flush()
            case "[":
                flush()
                guard let close = chars[i...].firstIndex(of: "]"), let n = Int(String(chars[(i + 1)..<close])) else {
                    throw CouchbaseLiteError(.invalidQuery, "Invalid array index in property path '\(text)'")
                }
                comps.append(.index(n))
                i = close
            default:
                key.append(c); haveKey = true
            }
            i += 1
        }
        flush()
        components = comps
    }

    /// The path string `init(parsing:)` reads back.
    var string: String {
        var out = ""
        for c in components {
            switch c {
            case .key(let k):
                if !out.isEmpty { out += "." }
                for ch in k {
                    if ch == "." || ch == "[" || ch == "\\" || ch == "$" { out.append("\\") }
                    out.append(ch)
                }
            case .index(let n): out += "[\(n)]"
            }
        }
        return out
    }

    /// The value at this path under `root` (negative indexes count from the end, as in Fleece).
    func evaluate(_ root: FleeceValue) -> FleeceValue? {
        CompiledPropertyPath(self).evaluate(root)
    }
}

/// A property path prepared for evaluating on many documents (one query run): keys resolved to
/// their shared-key codes once (``FleeceKey``), the same answers as ``PropertyPath/evaluate(_:)``.
// @unchecked because NOT thread-safe (its `FleeceKey`s cache codes): used by one query run, on the thread running it.
final class CompiledPropertyPath: @unchecked Sendable {
    enum Step {
        case key(FleeceKey)
        case index(Int)
    }

    let steps: [Step]

    init(_ path: PropertyPath) {
        steps = path.components.map {
            switch $0 {
            case .key(let k): return .key(FleeceKey(k))
            case .index(let n): return .index(n)
            }
        }
    }

    func evaluate(_ root: FleeceValue) -> FleeceValue? {
        var v = root
        for step in steps {
            switch step {
            case .key(let k):
                guard let d = v.dictValue, let next = d[k] else { return nil }
                v = next
            case .index(let n):
                guard let a = v.arrayValue else { return nil }
                let i = n < 0 ? a.count + n : n
                guard i >= 0, i < a.count else { return nil }
                v = a[i]
            }
        }
        return v
    }
}
