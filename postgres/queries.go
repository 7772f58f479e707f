package postgres

import "strconv"

// queries are the statements of one schema.
type queries struct {
	schema, prefix string

	open, renew, end, sweep, create, createList, remove, forget, watch, unwatch string
	get, children, relist, alive                                                string
	guard, set, del, exists                                                     string
}

// nodeCols are the columns a Node is scanned from (scanNode).
const nodeCols = "path, name, kind, sequential, seq, token, owner, version, created"

func newQueries(s string) *queries {
	return &queries{
		schema: s,
		prefix: channelPrefix(s),
		open:   "SELECT " + s + ".open($1::interval)",
		renew:  "SELECT " + s + ".renew($1)",
		end:    "DELETE FROM " + s + ".sessions WHERE id = $1",
		alive:  "SELECT EXISTS (SELECT 1 FROM " + s + ".sessions WHERE id = $1)",
		sweep:  "SELECT " + s + ".sweep()",
		create: "SELECT " + nodeCols + " FROM " + s + ".create_node($1, $2, $3, $4, $5, $6, $7)",
		createList: "CALL " + s + ".create_list($1, $2, $3, $4, $5, $6, $7" +
			", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
		remove: "SELECT " + s + ".remove($1, $2, $3)",
		forget: "SELECT " + s + ".forget($1, $2)",
		watch: "SELECT state, left_ms, kid_paths, kid_tokens FROM " + s +
			".watch($1, $2, $3, $4, $5, $6, $7)",
		unwatch:  "DELETE FROM " + s + ".watches WHERE session = $1 AND wid = $2",
		get:      "SELECT " + nodeCols + ", data FROM " + s + ".nodes WHERE path = $1",
		children: "SELECT " + nodeCols + " FROM " + s + ".children($1)",
		relist:   "SELECT " + nodeCols + " FROM " + s + ".relist($1)",
		guard:    "SELECT 1 FROM " + s + ".nodes WHERE path = $1 AND ($2 = 0 OR token = $2) FOR SHARE",
		set: "UPDATE " + s + ".nodes SET data = $3, version = version + 1 WHERE path = $1 AND ($2 = 0 OR token = $2)" +
			" AND (NOT $4 OR version = $5) RETURNING 1",
		del:    "DELETE FROM " + s + ".nodes WHERE path = $1 AND ($2 = 0 OR token = $2) AND (NOT $3 OR version = $4) RETURNING 1",
		exists: "SELECT version FROM " + s + ".nodes WHERE path = $1 AND ($2 = 0 OR token = $2)",
	}
}

// channel is the notification channel of session id.
func (q *queries) channel(id int64) string { return q.prefix + strconv.FormatInt(id, 10) }
