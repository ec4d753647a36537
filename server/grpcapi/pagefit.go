package grpcapi

import "google.golang.org/protobuf/proto"

// pageBudget is the most one page of a list may take on the wire: under
// gRPC's default 4 MiB receive limit, which every client that sets nothing
// has. A page of page_size items with the largest metadata allowed would
// not fit (1000 × ~66 KiB), so a page is cut to fit instead.
const pageBudget = 3 << 20

// fitPage asks for a page of size items and, while the answer would be
// over pageBudget, asks again for half as many. The store's next-page
// token then starts right after the last item sent, so paging goes on as
// usual; only the page holds fewer than asked, as the API allows.
func fitPage[M proto.Message](size int, page func(size int) (M, error)) (M, error) {
	for {
		resp, err := page(size)
		if err != nil || size <= 1 || proto.Size(resp) <= pageBudget {
			return resp, err
		}
		size /= 2
	}
}
