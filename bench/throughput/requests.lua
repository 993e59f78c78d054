-- wrk script of `python -m bench throughput`: sends the raw HTTP requests of a file written by
-- bench.throughput.wrk.write_requests, in order, and counts the answers by status.
--
--   wrk -t T -c C -d D --latency -s requests.lua URL -- FILE T MODE
--
-- FILE holds records "<byte length>\n<raw request>". MODE "cycle" (reads): every thread goes round all the requests,
-- thread t starting at request t * n / T (n requests), so that the threads spread over them. MODE "once" (signed
-- captures: a repeat is an idempotent retry that stores nothing): thread t sends only requests i with
-- i mod T == t, each once; when they are used up the thread stops and the run is marked exhausted. At the end one line
--   WRK_LUA {"sent": …, "statuses": {"200": …}, "exhausted": …, "p50_us": …, "p99_us": …, …}
-- gives what the threads sent and the statuses they were answered, for bench.throughput.wrk.parse.

local threads = {}

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

-- Per thread (read back by done() through thread:get).
sent, statuses, exhausted = 0, {}, false
local pool, size, position, cycle = {}, 0, 0, true

function init(args)
   local path, count, mode = args[1], tonumber(args[2]), args[3]
   cycle = mode ~= "once"
   local file = assert(io.open(path, "rb"))
   local data = file:read("*a")
   file:close()
   local pos, index = 1, 0
   while pos <= #data do
      local newline = data:find("\n", pos, true)
      local length = tonumber(data:sub(pos, newline - 1))
      if cycle or index % count == id then
         size = size + 1
         pool[size] = data:sub(newline + 1, newline + length)
      end
      index = index + 1
      pos = newline + 1 + length
   end
   if size == 0 then
      error("no request in " .. path .. " for thread " .. id)
   end
   if cycle then
      position = math.floor(id * size / count)
   end
end

function request()
   if position >= size then
      if not cycle then
         exhausted = true
         wrk.thread:stop()
      end
      position = 0
   end
   position = position + 1
   sent = sent + 1
   return pool[position]
end

function response(status, headers, body)
   local key = tostring(status)
   statuses[key] = (statuses[key] or 0) + 1
end

function done(summary, latency, requests)
   local total, merged, out = 0, {}, false
   for _, thread in ipairs(threads) do
      total = total + thread:get("sent")
      for status, n in pairs(thread:get("statuses")) do
         merged[status] = (merged[status] or 0) + n
      end
      out = out or thread:get("exhausted")
   end
   local parts = {}
   for status, n in pairs(merged) do
      table.insert(parts, string.format('"%s": %d', status, n))
   end
   io.write(string.format(
      'WRK_LUA {"sent": %d, "statuses": {%s}, "exhausted": %s, "requests": %d, "duration_us": %d, ' ..
      '"p50_us": %d, "p99_us": %d, "timeouts": %d}\n',
      total, table.concat(parts, ", "), tostring(out), summary.requests, summary.duration,
      latency:percentile(50), latency:percentile(99), summary.errors.timeout))
end
