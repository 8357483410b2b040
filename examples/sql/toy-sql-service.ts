/**
 * A toy SQLite resource service in the shape of a Gym resources server, loopback only.
 *
 *   node --import tsx examples/sql/toy-sql-service.ts --database-dir DIR [--port 0] [--session-ttl 600]
 *
 * It builds DIR/original.sqlite and DIR/variant.sqlite afresh from data/*.sql at start-up and
 * opens them read-only, so no request can change them.
 *   POST /sessions/initialize {"database": "original"|"variant"}  -> {"session_id", "token"}
 *   POST /execute {"sql": "...", "database"?: ...}   with X-Session-Token: runs on the session's
 *        database (or, without a session, on body.database); answers 200 with
 *        {"database", "columns", "rows", "row_count"} or, for a query SQLite refuses, 200 with
 *        {"error": "..."}: a SQL error is a result to judge, not a failed call
 *   POST /sessions/cleanup                           with X-Session-Token: ends the session
 *   GET  /stats -> {"active_sessions", "sessions_opened", "sessions_expired", "executions"}
 * Sessions never cleaned up expire after --session-ttl seconds (the service's own deadline for
 * clients that died before their cleanup).
 * It prints one line {"url", "pid"} once listening and stops on SIGTERM or SIGINT.
 */
import Database from 'better-sqlite3'
import {randomBytes, randomUUID} from 'node:crypto'
import {mkdirSync, readFileSync, rmSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {announceAndStopOnSignals, isMain, reply, serveJson} from '../lib/json-service.js'

const HERE = path.dirname(fileURLToPath(import.meta.url))
export const DATABASES = ['original', 'variant'] as const
type DatabaseName = (typeof DATABASES)[number]
const MAX_ROWS = 1000

interface Session {
  id: string
  database: DatabaseName
  lastUsed: number
}

export async function startToySqlService(options: {databaseDir: string; port?: number; sessionTtlSeconds?: number}) {
  mkdirSync(options.databaseDir, {recursive: true})
  const handles = new Map<DatabaseName, Database.Database>()
  for (const name of DATABASES) {
    const file = path.join(options.databaseDir, `${name}.sqlite`)
    rmSync(file, {force: true})
    const writer = new Database(file)
    writer.exec(readFileSync(path.join(HERE, 'data', `${name}.sql`), 'utf8'))
    writer.close()
    handles.set(name, new Database(file, {readonly: true, fileMustExist: true}))
  }
  const sessions = new Map<string, Session>()
  let opened = 0
  let expired = 0
  let executions = 0
  const ttlMs = (options.sessionTtlSeconds ?? 600) * 1000
  const sweeper = setInterval(() => {
    const now = Date.now()
    for (const [token, session] of sessions) {
      if (now - session.lastUsed > ttlMs) {
        sessions.delete(token)
        expired++
      }
    }
  }, Math.min(ttlMs, 5000))
  sweeper.unref()

  const execute = (database: DatabaseName, sql: string) => {
    executions++
    try {
      const statement = handles.get(database)!.prepare(sql)
      if (!statement.reader) return {database, error: 'only queries that return rows are allowed'}
      statement.raw(true)
      const rows = statement.all().slice(0, MAX_ROWS)
      return {database, columns: statement.columns().map((c) => c.name), rows, row_count: rows.length}
    } catch (error) {
      return {database, error: (error as Error).message}
    }
  }

  const service = await serveJson(({method, route, headers, body}) => {
    if (method === 'GET' && route === '/stats') {
      return reply(200, {active_sessions: sessions.size, sessions_opened: opened, sessions_expired: expired, executions})
    }
    if (method !== 'POST') return reply(405, {detail: `${method} ${route} is not served`})
    const token = headers['x-session-token']
    const session = typeof token === 'string' ? sessions.get(token) : undefined
    if (typeof token === 'string' && !session) return reply(401, {detail: 'unknown or expired session token'})
    if (session) session.lastUsed = Date.now()
    switch (route) {
      case '/sessions/initialize': {
        const database = body?.database ?? 'original'
        if (!DATABASES.includes(database)) return reply(422, {detail: `database must be one of ${DATABASES.join(', ')}`})
        const created: Session = {id: randomUUID(), database, lastUsed: Date.now()}
        const newToken = randomBytes(16).toString('hex')
        sessions.set(newToken, created)
        opened++
        return reply(200, {session_id: created.id, token: newToken, database})
      }
      case '/execute': {
        if (typeof body?.sql !== 'string' || body.sql.trim() === '') return reply(422, {detail: 'sql must be a non-empty string'})
        const database = session?.database ?? body.database
        if (!DATABASES.includes(database)) return reply(422, {detail: `without a session, database must be one of ${DATABASES.join(', ')}`})
        return reply(200, execute(database, body.sql))
      }
      case '/sessions/cleanup': {
        if (!session) return reply(401, {detail: 'cleanup needs the X-Session-Token of a live session'})
        sessions.delete(token as string)
        return reply(200, {released: session.id})
      }
      default:
        return reply(404, {detail: `no route ${route}`})
    }
  }, options.port)
  return {
    url: service.url,
    activeSessions: () => sessions.size,
    close: async () => {
      clearInterval(sweeper)
      await service.close()
      for (const handle of handles.values()) handle.close()
    },
  }
}

if (isMain(import.meta.url)) {
  const {values} = parseArgs({options: {'database-dir': {type: 'string'}, port: {type: 'string', default: '0'}, 'session-ttl': {type: 'string', default: '600'}}})
  if (!values['database-dir']) {
    process.stderr.write('usage: toy-sql-service.ts --database-dir DIR [--port 0] [--session-ttl 600]\n')
    process.exit(2)
  }
  announceAndStopOnSignals(await startToySqlService({databaseDir: values['database-dir'], port: Number(values.port), sessionTtlSeconds: Number(values['session-ttl'])}))
}
