import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// The JSON query trees `QueryBuilder` expressions build are the ones the N1QL parser builds
/// for the same expression (spec 9.1), so both run through the same translation.
final class QueryBuilderTreeTests: XCTestCase {
    private func assertTree(_ builder: ExpressionProtocol, _ n1ql: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let parsed = try N1QLParser.parseExpressionTree(n1ql)
        XCTAssertEqual(try builder.node.get(), parsed, n1ql, file: file, line: line)
    }

    func testExpressionsMatchTheN1QLParser() throws {
        let a = Expression.property("a"), b = Expression.property("b.c")
        try assertTree(a.equalTo(Expression.string("x")), "a = 'x'")
        try assertTree(a.notEqualTo(Expression.int(1)), "a != 1")
        try assertTree(a.lessThan(b), "a < b.c")
        try assertTree(a.lessThanOrEqualTo(b), "a <= b.c")
        try assertTree(a.greaterThan(b), "a > b.c")
        try assertTree(a.greaterThanOrEqualTo(b), "a >= b.c")
        try assertTree(a.add(b), "a + b.c")
        try assertTree(a.subtract(b), "a - b.c")
        try assertTree(a.multiply(b), "a * b.c")
        try assertTree(a.divide(b), "a / b.c")
        try assertTree(a.modulo(b), "a % b.c")
        try assertTree(a.like(Expression.string("x%")), "a LIKE 'x%'")
        try assertTree(a.between(Expression.int(1), and: Expression.int(5)), "a BETWEEN 1 AND 5")
        try assertTree(a.in([Expression.int(1), Expression.string("two")]), "a IN (1, 'two')")
        try assertTree(a.is(Expression.value(nil)), "a IS NULL")
        try assertTree(a.isNot(Expression.value(nil)), "a IS NOT NULL")
        try assertTree(a.isValued(), "a IS VALUED")
        try assertTree(a.isNotValued(), "a IS NOT VALUED")
        try assertTree(a.and(b), "a AND b.c")
        try assertTree(a.or(b), "a OR b.c")
        try assertTree(Expression.not(a), "NOT a")
        try assertTree(Expression.negated(a), "-a")
        try assertTree(Expression.parameter("p"), "$p")
        try assertTree(Expression.boolean(true), "TRUE")
        try assertTree(Expression.double(1.5), "1.5")
        try assertTree(Expression.array([1, Expression.property("a")]), "[1, a]")
        try assertTree(Expression.property("a[0].b"), "a[0].b")
        try assertTree(Function.upper(a), "UPPER(a)")
        try assertTree(Function.count(Expression.all()), "COUNT(*)")
        try assertTree(Function.round(a, digits: Expression.int(2)), "ROUND(a, 2)")
        try assertTree(Function.contains(a, substring: Expression.string("x")), "CONTAINS(a, 'x')")
        try assertTree(ArrayFunction.contains(a, value: Expression.int(1)), "ARRAY_CONTAINS(a, 1)")
        try assertTree(ArrayFunction.length(a), "ARRAY_LENGTH(a)")
        let v = ArrayExpression.variable("v")
        try assertTree(ArrayExpression.any(v).in(a).satisfies(ArrayExpression.variable("v.x").equalTo(Expression.int(1))),
                       "ANY v IN a SATISFIES v.x = 1 END")
        try assertTree(ArrayExpression.every(v).in(a).satisfies(v.greaterThan(Expression.int(1))),
                       "EVERY v IN a SATISFIES v > 1 END")
        try assertTree(ArrayExpression.anyAndEvery(v).in(a).satisfies(v.greaterThan(Expression.int(1))),
                       "ANY AND EVERY v IN a SATISFIES v > 1 END")
        try assertTree(a.equalTo(Expression.string("x")).collate(Collation.unicode().ignoreCase(true).ignoreAccents(true)),
                       "(a = 'x') COLLATE (UNICODE NOCASE NODIAC)")
        try assertTree(a.equalTo(Expression.string("x")).collate(Collation.ascii().ignoreCase(true)),
                       "(a = 'x') COLLATE (NOUNICODE NOCASE)")
    }
}
