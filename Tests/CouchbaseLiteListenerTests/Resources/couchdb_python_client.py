"""Drives a Couchbase Lite listener with a real third-party client: couchdb-python
(the `CouchDB` package on PyPI). Usage: couchdb_python_client.py http://127.0.0.1:PORT/
Exits non-zero (with a traceback) on the first mismatch."""
import sys

import couchdb

url = sys.argv[1]
server = couchdb.Server(url)

# Server
assert server.version(), "no version"
assert 'pyclient' not in server

# Database
db = server.create('pyclient')
assert 'pyclient' in server
assert 'pyclient' in list(server)
try:
    server.create('pyclient')
    raise AssertionError('creating an existing database must fail')
except couchdb.PreconditionFailed:
    pass

# Documents: create (POST and PUT), read, update, conflict, delete
doc_id, rev = db.save({'type': 'note', 'text': 'hello'})
assert rev.startswith('1-'), rev
doc = db[doc_id]
assert doc['text'] == 'hello'
doc['text'] = 'updated'
db.save(doc)
assert db[doc_id]['text'] == 'updated'
assert db[doc_id].rev.startswith('2-')

db['named'] = {'n': 1, 'tags': ['a', 'b']}
named = db['named']
assert named['tags'] == ['a', 'b']
stale = dict(named)
named['n'] = 2
db.save(named)
try:
    db.save(stale)
    raise AssertionError('saving a stale revision must conflict')
except couchdb.ResourceConflict:
    pass

# Attachments: upload, download, delete
db.put_attachment(db['named'], b'attachment bytes \x00\xff', filename='hello.bin',
                  content_type='application/octet-stream')
body = db.get_attachment('named', 'hello.bin')
assert body.read() == b'attachment bytes \x00\xff'
assert db['named']['_attachments']['hello.bin']['length'] == 19
# Bytes, not str: the client sets Content-Length from len(str), wrong for non-ASCII text.
db.put_attachment(db['named'], 'texte accentué'.encode('utf-8'), filename='note.txt', content_type='text/plain')
assert db.get_attachment('named', 'note.txt').read().decode('utf-8') == 'texte accentué'
db.delete_attachment(db['named'], 'hello.bin')
assert db.get_attachment('named', 'hello.bin') is None

# Bulk update and _all_docs
results = db.update([{'_id': 'k%02d' % i, 'i': i} for i in range(5)])
assert all(ok for ok, _, _ in results), results
ids = [row.id for row in db.view('_all_docs')]
assert ids == sorted(ids), ids
assert {'named', doc_id, 'k00', 'k04'} <= set(ids), ids
rows = list(db.view('_all_docs', startkey='k01', endkey='k03', include_docs=True))
assert [r.id for r in rows] == ['k01', 'k02', 'k03'], rows
assert rows[0].doc['i'] == 1
assert len(list(db.view('_all_docs', keys=['k02', 'nope']))) == 2
assert len(db) == 7, len(db)

# Changes feed
changes = db.changes()
seen = [c['id'] for c in changes['results']]
assert set(seen) == {doc_id, 'named', 'k00', 'k01', 'k02', 'k03', 'k04'}, seen
last = changes['last_seq']
assert db.changes(since=last)['results'] == []
timed_out = db.changes(feed='longpoll', since=last, timeout=300)
assert timed_out['results'] == [], timed_out
db['late'] = {'v': 1}
woke = db.changes(feed='longpoll', since=last, timeout=5000)
assert [c['id'] for c in woke['results']] == ['late'], woke

# Delete documents and the database
db.delete(db['late'])
assert 'late' not in db
assert db.get('late') is None
info = db.info()
assert info['doc_count'] == 7 and info['db_name'] == 'pyclient', info
db.compact()
del server['pyclient']
assert 'pyclient' not in server
print('couchdb-python client: all checks passed')
