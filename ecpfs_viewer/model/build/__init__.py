"""The ecpfs builder (spec section 3): checks, estimate, routing, writer, output, sources."""
