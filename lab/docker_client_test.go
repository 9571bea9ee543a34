package lab

import (
	"bufio"
	"io"
	"net"
	"net/textproto"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseHTTPResponse(t *testing.T) {
	for _, tc := range []struct {
		name, resp string
		code       int
		body       string
		wantErr    bool
	}{
		{name: "ok", resp: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nOK", code: 200, body: "OK"},
		{name: "no content", resp: "HTTP/1.1 204 No Content\r\nServer: Docker\r\n\r\n", code: 204},
		{name: "body with blank line", resp: "HTTP/1.0 500 x\r\n\r\na\r\n\r\nb", code: 500, body: "a\r\n\r\nb"},
		{name: "no end of headers", resp: "HTTP/1.0 200 OK\r\nX: y", wantErr: true},
		{name: "not http", resp: "SSH-2.0-x\r\n\r\n", wantErr: true},
		{name: "bad code", resp: "HTTP/1.0 2x0 OK\r\n\r\n", wantErr: true},
		{name: "empty", resp: "", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := parseHTTPResponse([]byte(tc.resp))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (code != tc.code || string(body) != tc.body) {
				t.Errorf("got %d %q, want %d %q", code, body, tc.code, tc.body)
			}
		})
	}
}

// TestDockerAPIRequest checks the request API writes on dockerd's socket
// (method, path, JSON body and its length) and what it makes of the answer,
// against a listener that answers as dockerd does an HTTP/1.0 client.
func TestDockerAPIRequest(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type request struct {
		line, contentType, body string
		err                     error
	}
	got := make(chan request, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- request{err: err}
			return
		}
		defer c.Close()
		r := textproto.NewReader(bufio.NewReader(c))
		line, err := r.ReadLine()
		if err != nil {
			got <- request{err: err}
			return
		}
		h, err := r.ReadMIMEHeader()
		if err != nil {
			got <- request{err: err}
			return
		}
		n, _ := strconv.Atoi(h.Get("Content-Length"))
		body := make([]byte, n)
		if _, err := io.ReadFull(r.R, body); err != nil {
			got <- request{err: err}
			return
		}
		io.WriteString(c, "HTTP/1.0 201 Created\r\nContent-Type: application/json\r\n\r\n{\"Id\":\"abc\"}\n")
		got <- request{line: line, contentType: h.Get("Content-Type"), body: string(body)}
	}()
	d := &Docker{Socket: sock}
	code, body, err := d.API("POST", "/v1.43/containers/create?name=x", map[string]any{"Image": "i"})
	if err != nil {
		t.Fatal(err)
	}
	if code != 201 || strings.TrimSpace(string(body)) != `{"Id":"abc"}` {
		t.Errorf("API = %d %q, want 201 {\"Id\":\"abc\"}", code, body)
	}
	req := <-got
	if req.err != nil {
		t.Fatal(req.err)
	}
	want := request{line: "POST /v1.43/containers/create?name=x HTTP/1.0", contentType: "application/json", body: `{"Image":"i"}`}
	if req != want {
		t.Errorf("dockerd got %+v, want %+v", req, want)
	}
}
