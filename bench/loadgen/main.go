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

// post retries 429, 5xx and connection errors with a growing pause; true when the object exists now
// (201/200, or 409: it was there already).
func (c *client) post(path string, body []byte) bool {
	pause := 50 * time.Millisecond
	for attempt := 0; attempt < 30; attempt++ {
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
				if !c.post(*path, body) {
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

type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	} `json:"object"`
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
				c.post(base+name+"/binding", []byte(body))
			}
		}(i)
	}
	seen := map[string]bool{}
	rv := ""
	announced := false
	for {
		q := url.Values{}
		q.Set("watch", "1")
		q.Set("fieldSelector", "spec.schedulerName="+*scheduler+",spec.nodeName=")
		q.Set("timeoutSeconds", "86400")
		q.Set("resourceVersion", rv)
		req, _ := http.NewRequest("GET", c.server+"/api/v1/namespaces/"+*namespace+"/pods?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := c.http.Do(req)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if resp.StatusCode != 200 {
			if resp.StatusCode == 410 {
				rv = ""
			}
			resp.Body.Close()
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if !announced {
			fmt.Println("ready")
			announced = true
		}
		dec := json.NewDecoder(bufio.NewReaderSize(resp.Body, 1<<20))
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				break // closed by the apiserver (or too far behind): watch again from rv
			}
			if ev.Object.Metadata.ResourceVersion != "" {
				rv = ev.Object.Metadata.ResourceVersion
			}
			name := ev.Object.Metadata.Name
			if ev.Type != "ADDED" || ev.Object.Spec.NodeName != "" || seen[name] {
				continue
			}
			seen[name] = true
			mu.Lock()
			pending = append(pending, name)
			mu.Unlock()
			more.Signal()
		}
		resp.Body.Close()
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen create|bind [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "create":
		os.Exit(create(os.Args[2:]))
	case "bind":
		os.Exit(bind(os.Args[2:]))
	default:
		fmt.Fprintln(os.Stderr, "usage: loadgen create|bind [flags]")
		os.Exit(2)
	}
}
