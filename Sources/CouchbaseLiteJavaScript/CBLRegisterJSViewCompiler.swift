import CouchbaseLite

/// Registers the JavaScript view compiler and filter compiler, as 1.x's `CBLRegisterJSViewCompiler()` did.
public func CBLRegisterJSViewCompiler(limits: CBLJSLimits = CBLJSLimits()) {
    CBLView.setCompiler(CBLJSViewCompiler(limits: limits))
    CBLDatabase.setFilterCompiler(CBLJSFilterCompiler(limits: limits))
}
