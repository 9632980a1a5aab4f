// loadgen is the Go half of bench/bind_throughput.py: it loads a kube-apiserver with as little CPU of its
// own as it can (the machine is shared with the apiserver and the scheduler under test). Standard library
// only; HTTP/2 over one TLS connection, many requests in flight.
//
//	loadgen create -server URL -ca CA -token-file F -path /api/v1/... -bodies FILE [-rate R -t0 UNIX] [-conns N]
//	    POST every line of FILE (one JSON object a line) to path; with -rate the i-th is due at t0 + i/rate.
//	    Prints "failed N" at the end (exit 1 when N > 0).
//	loadgen bind -server URL -ca CA -token-file F -namespace NS -scheduler-name S [-conns N]
//	    The bare binder (the ceiling): watches the pending pods of scheduler S in NS (the existing ones,
//	    then new ones) and posts pods/binding for each, nodes taken round-robin, nothing checked.
//	    Prints "ready" once the watch is open; runs until killed.
//	loadgen rtt -server URL -ca CA -token-file F -namespace NS -node N [-gap MS] [-h1]
//	    Binds the pods named on stdin (one a line) to node N one at a time, GAP ms apart (an arriving pod's
//	    bind), and prints each request's wall time in us with the protocol; -h1: HTTP/1.1 only (else
//	    HTTP/2, as client-go). bench/bind_rtt.py compares it with volsched's own client.
//	loadgen watch -server URL -ca CA -token-file F -namespace NS -rv RV -out FILE
//	    Watches the pods of NS from resourceVersion RV and appends to FILE, as they are received,
//	    "A <name> <unix ns>" for a pod seen for the first time and "B <name> <node> <unix ns>" for a pod
//	    seen bound for the first time. Runs until killed.
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type client struct {
	server string
	token  string
	http   *http.Client
}

func newClient(server, caFile, tokenFile string) (*client, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 1000,
	}
	return &client{server: server, token: strings.TrimSpace(string(token)), http: &http.Client{Transport: tr}}, nil
}

func (c *client) do(method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, c.server+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// post retries 429, 5xx and connection errors with a growing pause (up to a second), attempts times
// (0: until the apiserver answers otherwise); true when the object exists now (201/200, or 409: it was
// there already).
func (c *client) post(path string, body []byte, attempts int) bool {
	pause := 50 * time.Millisecond
	for attempt := 0; attempts == 0 || attempt < attempts; attempt++ {
		code, _, err := c.do("POST", path, body)
		if err == nil {
			switch {
			case code == 200 || code == 201 || code == 409:
				return true
			case code != 429 && code < 500:
				return false
			}
		}
		time.Sleep(pause)
		if pause < time.Second {
			pause *= 2
		}
	}
	return false
}

func common(fs *flag.FlagSet) (*string, *string, *string, *int) {
	return fs.String("server", "", "apiserver URL"), fs.String("ca", "", "CA file"),
		fs.String("token-file", "", "bearer token file"), fs.Int("conns", 64, "requests in flight")
}

func create(args []string) int {
	fs := flag.NewFlagSet("create", flag.ExitOnError)
	server, ca, tokenFile, conns := common(fs)
	path := fs.String("path", "", "collection path, e.g. /api/v1/namespaces/x/pods")
	bodies := fs.String("bodies", "", "file with one JSON object a line")
	rate := fs.Float64("rate", 0, "objects per second (0: as fast as possible)")
	t0 := fs.Float64("t0", 0, "unix time the first object is due (with -rate)")
	fs.Parse(args)
	c, err := newClient(*server, *ca, *tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	data, err := os.ReadFile(*bodies)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	work := make(chan []byte, *conns)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range work {
				if !c.post(*path, body, 30) {
					failed.Add(1)
				}
			}
		}()
	}
	start := time.Unix(0, int64(*t0*1e9))
	for i, line := range lines {
		if *rate > 0 {
			due := start.Add(time.Duration(float64(i) / *rate * 1e9))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		work <- line
	}
	close(work)
	wg.Wait()
	fmt.Printf("failed %d\n", failed.Load())
	if failed.Load() > 0 {
		return 1
	}
	return 0
}

// podObject holds the fields of a pod loadgen needs (the decoder skips the rest).
type podObject struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
}

type watchEvent struct {
	Type   string    `json:"type"`
	Object podObject `json:"object"`
}

func bind(args []string) int {
	fs := flag.NewFlagSet("bind", flag.ExitOnError)
	server, ca, tokenFile, conns := common(fs)
	namespace := fs.String("namespace", "", "namespace of the pods")
	scheduler := fs.String("scheduler-name", "", "spec.schedulerName of the pods to bind")
	fs.Parse(args)
	c, err := newClient(*server, *ca, *tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	code, data, err := c.do("GET", "/api/v1/nodes", nil)
	if err != nil || code != 200 {
		fmt.Fprintln(os.Stderr, "listing nodes:", code, err)
		return 2
	}
	var nodeList struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &nodeList); err != nil || len(nodeList.Items) == 0 {
		fmt.Fprintln(os.Stderr, "no nodes", err)
		return 2
	}
	nodes := make([]string, len(nodeList.Items))
	for i, n := range nodeList.Items {
		nodes[i] = n.Metadata.Name
	}
	base := "/api/v1/namespaces/" + *namespace + "/pods/"
	// Unbounded hand-off from the watch to the binders: the watch must never wait on a bind, or the
	// apiserver closes it as unresponsive.
	var mu sync.Mutex
	more := sync.NewCond(&mu)
	var pending []string
	for i := 0; i < *conns; i++ {
		go func(turn int) {
			for {
				mu.Lock()
				for len(pending) == 0 {
					more.Wait()
				}
				name := pending[0]
				pending = pending[1:]
				mu.Unlock()
				node := nodes[turn%len(nodes)]
				turn += *conns
				body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":%q},"target":{"apiVersion":"v1","kind":"Node","name":%q}}`, name, node)
				c.post(base+name+"/binding", []byte(body), 0)
			}
		}(i)
	}
	seen := map[string]bool{}
	handle := func(ev *watchEvent) {
		name := ev.Object.Metadata.Name
		if ev.Type != "ADDED" || ev.Object.Spec.NodeName != "" || seen[name] {
			return
		}
		seen[name] = true
		mu.Lock()
		pending = append(pending, name)
		mu.Unlock()
		more.Signal()
	}
	selector := "spec.schedulerName=" + *scheduler + ",spec.nodeName="
	relist := func() string {
		items, listRV := c.listPods(*namespace, selector)
		for i := range items {
			handle(&watchEvent{Type: "ADDED", Object: items[i]})
		}
		return listRV
	}
	announced := false
	c.watchPods(*namespace, selector, "", relist, func() {
		if !announced {
			fmt.Println("ready")
			announced = true
		}
	}, handle)
	return 0
}

// watchPods follows the pods of a namespace from rv, again from the last event seen whenever the
// apiserver ends the watch (it closes one that falls behind), and calls fn for each event. Without an rv
// (at the start, or when the apiserver no longer has the events since rv) it calls relist, which hands
// the current pods to fn and returns the list's resourceVersion. (A watch from "" would send the
// existing pods in the order of their names, not of their versions: resumed after a close, it would
// miss some.)
func (c *client) watchPods(namespace, selector, rv string, relist func() string, opened func(), fn func(ev *watchEvent)) {
	refused := 0 // the last status a watch was refused with, said once on stderr (a 401: no token)
	for {
		if rv == "" {
			rv = relist()
			if rv == "" {
				time.Sleep(200 * time.Millisecond)
				continue
			}
		}
		q := url.Values{}
		q.Set("watch", "1")
		q.Set("timeoutSeconds", "86400")
		q.Set("resourceVersion", rv)
		if selector != "" {
			q.Set("fieldSelector", selector)
		}
		req, _ := http.NewRequest("GET", c.server+"/api/v1/namespaces/"+namespace+"/pods?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := c.http.Do(req)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if resp.StatusCode != 200 {
			if resp.StatusCode != refused {
				refused = resp.StatusCode
				fmt.Fprintf(os.Stderr, "watch refused: %s; asking again every 0.2s\n", resp.Status)
			}
			if resp.StatusCode == 410 { // too old: take the whole state again
				rv = ""
			}
			resp.Body.Close()
			time.Sleep(200 * time.Millisecond)
			continue
		}
		opened()
		dec := json.NewDecoder(bufio.NewReaderSize(resp.Body, 1<<20))
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				break
			}
			if ev.Object.Metadata.ResourceVersion != "" {
				rv = ev.Object.Metadata.ResourceVersion
			}
			fn(&ev)
		}
		resp.Body.Close()
	}
}

func watch(args []string) int {
	fs := flag.NewFlagSet("watch", flag.ExitOnError)
	server, ca, tokenFile, _ := common(fs)
	namespace := fs.String("namespace", "", "namespace of the pods")
	rv := fs.String("rv", "", "resourceVersion to watch from")
	out := fs.String("out", "", "file to append the events to")
	fs.Parse(args)
	c, err := newClient(*server, *ca, *tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w := bufio.NewWriter(f)
	seen, bound := map[string]bool{}, map[string]bool{}
	record := func(ev *watchEvent) {
		now := time.Now().UnixNano()
		if ev.Type != "ADDED" && ev.Type != "MODIFIED" {
			return
		}
		name := ev.Object.Metadata.Name
		if !seen[name] {
			seen[name] = true
			fmt.Fprintf(w, "A %s %d\n", name, now)
		}
		if node := ev.Object.Spec.NodeName; node != "" && !bound[name] {
			bound[name] = true
			fmt.Fprintf(w, "B %s %s %d\n", name, node, now)
		}
		w.Flush()
	}
	relist := func() string {
		items, listRV := c.listPods(*namespace, "")
		for i := range items {
			ev := watchEvent{Type: "ADDED", Object: items[i]}
			record(&ev)
		}
		return listRV
	}
	c.watchPods(*namespace, "", *rv, relist, func() {}, record)
	return 0
}

// listPods lists the pods of a namespace (with a field selector); "" as the version when it failed.
func (c *client) listPods(namespace, selector string) ([]podObject, string) {
	q := url.Values{}
	if selector != "" {
		q.Set("fieldSelector", selector)
	}
	code, data, err := c.do("GET", "/api/v1/namespaces/"+namespace+"/pods?"+q.Encode(), nil)
	if err != nil || code != 200 {
		return nil, ""
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []podObject `json:"items"`
	}
	if json.Unmarshal(data, &list) != nil {
		return nil, ""
	}
	return list.Items, list.Metadata.ResourceVersion
}

func rtt(args []string) int {
	fs := flag.NewFlagSet("rtt", flag.ExitOnError)
	server, ca, tokenFile, _ := common(fs)
	namespace := fs.String("namespace", "default", "the pods' namespace")
	node := fs.String("node", "", "the node every pod is bound to")
	gap := fs.Int("gap", 50, "ms between two binds")
	h1 := fs.Bool("h1", false, "HTTP/1.1 only")
	_ = fs.Parse(args)
	c, err := newClient(*server, *ca, *tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if *h1 {
		tr := c.http.Transport.(*http.Transport)
		tr.ForceAttemptHTTP2 = false
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		name := strings.TrimSpace(lines.Text())
		if name == "" {
			continue
		}
		body, _ := json.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "Binding",
			"metadata": map[string]string{"name": name, "namespace": *namespace},
			"target":   map[string]string{"apiVersion": "v1", "kind": "Node", "name": *node},
		})
		time.Sleep(time.Duration(*gap) * time.Millisecond)
		req, _ := http.NewRequest("POST", c.server+"/api/v1/namespaces/"+url.PathEscape(*namespace)+"/pods/"+url.PathEscape(name)+"/binding", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		start := time.Now()
		resp, err := c.http.Do(req)
		if err != nil {
			fmt.Println("error", err)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s %d\n", time.Since(start).Microseconds(), resp.Proto, resp.StatusCode)
	}
	return 0
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen create|bind|watch|rtt [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "create":
		os.Exit(create(os.Args[2:]))
	case "bind":
		os.Exit(bind(os.Args[2:]))
	case "watch":
		os.Exit(watch(os.Args[2:]))
	case "rtt":
		os.Exit(rtt(os.Args[2:]))
	default:
		fmt.Fprintln(os.Stderr, "usage: loadgen create|bind|watch|rtt [flags]")
		os.Exit(2)
	}
}
